#!/usr/bin/env bash
# 500 real-time streams for 20 s into a local 3-node JetStream cluster (release build), then
# `audit --all` of what the cluster holds.
set -euo pipefail
. scripts/suite-lib.sh
jc_suite live-500
jc_need_nats_server || jc_not_run "nats-server is missing (no Debian package, no Go toolchain to build it)"
jc_check "cargo build --release --bin jouleclaw" cargo build -q --release --bin jouleclaw
[ "$JC_FAILED" -eq 0 ] || { jc_close; exit 1; }
bin="$CARGO_TARGET_DIR/release/jouleclaw"
dir=$(mktemp -d)
cleanup() {
    crates/jouleclaw-live/scripts/cluster.sh stop "$dir/cluster" || true
    rm -rf "$dir" || true
}
trap cleanup EXIT
# Loopback ports nobody listens on, below the ephemeral range (other clusters may run on this
# machine): BASE..BASE+2 for clients, BASE+10..BASE+12 for routes, BASE+20..BASE+22 for monitoring.
base=${JC_LIVE_PORT_BASE:-$(crates/jouleclaw-live/scripts/cluster.sh base || true)}
[ -n "$base" ] || jc_not_run "no free loopback ports for a 3-node cluster"
url=$(crates/jouleclaw-live/scripts/cluster.sh start "$dir/cluster" "$base")
jc_check "keygen" "$bin" keygen --out "$dir/live.key" --pub-out "$dir/live.pub"
[ "$JC_FAILED" -eq 0 ] || { jc_close; exit 1; }
jc_check "live: 500 streams, 20 s, replicas 3" bash -c 'out=$1; shift; "$@" >"$out"' _ "$dir/live.out" \
    "$bin" live --streams 500 --seconds 20 --sink "$url" --replicas 3 --key "$dir/live.key" --journal "$dir/journal.bin"
cat "$dir/live.out"
# Its load against its schedule, said on its last line (kept up or not: this machine is shared).
jc_check "live ends with its verdict on the schedule" \
    bash -c 'tail -1 "$1" | grep -qE "^verdict     (kept up: |fell behind by )"' _ "$dir/live.out"
jc_check "live prints the schedule beside what it minted and accepted" \
    grep -qE "^schedule    50000 windows and [0-9]+ ticks scheduled; [0-9]+ windows minted, [0-9]+ ticks accepted" "$dir/live.out"
jc_check "audit --all" bash -c 'set -o pipefail; "$1" audit --pub "$2" --nats "$3" --all | tail -1' _ "$bin" "$dir/live.pub" "$url"
jc_close
