#!/usr/bin/env bash
# The shared table of tampered stream directories (conformance/stream-at-rest-tamper.json,
# spec/STREAM-AT-REST.md section 6) against the Python verifier (verify_stream.py) and the
# Python binding's verify_stream_dir. The Rust checkers run the same table in `cargo test`
# (tests/cli.rs, tamper_table_is_current_and_every_rust_checker_agrees).
# Provisions a venv under $JC_CACHE/stream-tamper-venv with the verifier's pinned requirements
# and the binding built from this tree (maturin through pip). Bounded: 30 minutes.
set -euo pipefail
name=stream-tamper
cache=${JC_CACHE:-${CARGO_TARGET_DIR:-target}/jc-cache}
venv="$cache/$name-venv"
if ! command -v python3 >/dev/null 2>&1; then
    echo "NOT RUN: $name: no python3"
    exit 3
fi
mkdir -p "$cache"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || { echo "NOT RUN: $name: python3 -m venv failed"; exit 3; }
fi
if ! timeout 900 "$venv/bin/pip" install -q --disable-pip-version-check \
        -r conformance/verifiers/python/requirements.txt ./bindings/python; then
    echo "NOT RUN: $name: could not install the verifier's requirements or build the binding"
    exit 3
fi
# The runner prints its own closing line: `stream-tamper: N passed, N failed`.
timeout 1800 "$venv/bin/python" conformance/verifiers/python/stream_tamper.py
