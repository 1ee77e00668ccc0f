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
# A real MCP server's tool list for the toolset tests (test_toolset.py): the pinned npm package
# installed with its install scripts disabled, started over stdio without network and asked only
# tools/list (crates/jouleclaw-structured/tests/corpus/mcp_tools.mjs). A package that is not
# served fails the suite.
MCP_PKG="@modelcontextprotocol/server-memory@2026.8.31"
mcpdir="$JC_CACHE/python-mcp"
{ command -v npm >/dev/null && command -v node >/dev/null; } || jc_apt_install nodejs npm || true
if [ "$(cat "$mcpdir/.jc-reqs" 2>/dev/null)" != "$MCP_PKG" ]; then
    rm -rf "$mcpdir" && mkdir -p "$mcpdir"
    jc_check "npm install $MCP_PKG" sh -c "cd '$mcpdir' && echo '{\"name\":\"jc-python-mcp\",\"private\":true}' >package.json && npm install --no-audit --no-fund --ignore-scripts --loglevel=error '$MCP_PKG' >/dev/null && echo '$MCP_PKG' >.jc-reqs"
fi
mcp_tools="$mcpdir/tools.json"
rm -f "$mcp_tools"
jc_check "MCP tool list fetched ($MCP_PKG, no network, tools/list only)" \
    node crates/jouleclaw-structured/tests/corpus/mcp_tools.mjs "$mcpdir/node_modules" \
    @modelcontextprotocol/server-memory "$mcp_tools"
jc_check "pytest bindings/python/tests" env JOULECLAW_BIN="$CARGO_TARGET_DIR/debug/jouleclaw" \
    JOULECLAW_MCP_TOOLS="$mcp_tools" \
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
