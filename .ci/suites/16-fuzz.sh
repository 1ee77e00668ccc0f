#!/usr/bin/env bash
# Each fuzz target for 30 s (cargo-fuzz on a nightly toolchain); the committed seed corpora are
# read, what a run adds goes to $JC_CACHE. (The corpora are also replayed by plain cargo test.)
set -euo pipefail
. scripts/suite-lib.sh
jc_suite fuzz
cargo +nightly --version >/dev/null 2>&1 || jc_not_run "no nightly Rust toolchain (rustup toolchain install nightly)"
if ! command -v cargo-fuzz >/dev/null; then
    CARGO_INSTALL_ROOT="$JC_CACHE" timeout 1200 cargo install -q cargo-fuzz --version 0.13.2 --locked \
        || jc_not_run "cannot install cargo-fuzz 0.13.2 from crates.io"
fi
for target in parse_trace_line verify_sequence decode_receipt verify_cose structured_validate; do
    corpus="$JC_CACHE/fuzz-corpus/$target"
    mkdir -p "$corpus"
    seeds="fuzz/corpus/$target"
    [ -d "$seeds" ] || seeds=""
    jc_check "fuzz $target (30 s)" bash -c 'cd fuzz && cargo +nightly fuzz run "$1" "$2" ${3:+"../$3"} \
        -- -max_total_time=30 -rss_limit_mb=2048 2>&1 | tail -n 2; exit "${PIPESTATUS[0]}"' _ "$target" "$corpus" "$seeds"
done
jc_close
