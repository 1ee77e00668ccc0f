#!/usr/bin/env bash
# The Python package (PyO3 wheel built with maturin by pip) and its tests against real Pipecat
# (pipecat-ai 1.14.0 from PyPI) in a venv under $JC_CACHE; then the Pipecat example's receipts
# checked by the CLI, and its run directory by the CLI and by verify_stream.py.
set -euo pipefail
. scripts/suite-lib.sh
jc_suite python
command -v python3 >/dev/null || jc_apt_install python3 python3-venv python3-pip \
    || jc_not_run "python3 is missing and cannot be installed"
jc_venv python "pipecat-ai==1.14.0" pytest -r conformance/verifiers/python/requirements.txt \
    || jc_not_run "cannot build the venv from PyPI (pipecat-ai 1.14.0, pytest)"
py="$JC_VENV/bin/python"
jc_check "cargo build --bin jouleclaw" cargo build -q --bin jouleclaw
[ "$JC_FAILED" -eq 0 ] || { jc_close; exit 1; }
# The package itself is rebuilt every run (it is what is tested).
jc_check "pip install ./bindings/python" "$JC_VENV/bin/pip" install -q --disable-pip-version-check \
    --force-reinstall --no-deps ./bindings/python
jc_check "pytest bindings/python/tests" env JOULECLAW_BIN="$CARGO_TARGET_DIR/debug/jouleclaw" \
    "$py" -m pytest -q bindings/python/tests --ignore bindings/python/tests/test_real_cascade.py \
    --ignore bindings/python/tests/test_livekit.py --ignore bindings/python/tests/test_livekit_call.py
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
jc_check "examples/python/pipecat_receipts.py" "$py" examples/python/pipecat_receipts.py --out "$out/receipts"
jc_check "receipts verify of the example's receipts" "$CARGO_TARGET_DIR/debug/jouleclaw" receipts verify \
    --pub "$out/receipts/signer.pub" "$out/receipts/receipts.cbor"
# The whole run directory (seals, stop-latency and interaction documents), by the CLI and by the
# Python stream verifier.
jc_check "receipts verify of the example's run directory" "$CARGO_TARGET_DIR/debug/jouleclaw" receipts verify \
    --pub "$out/receipts/signer.pub" "$out/receipts"
jc_check "verify_stream.py of the example's run directory" "$py" conformance/verifiers/python/verify_stream.py \
    --pub "$out/receipts/signer.pub" "$out/receipts"
jc_close
