# Shared by `check` and `selftest`: build the three verifier environments from the registries.
# VERIFIER_LANGS are the verifiers `check` runs and sums, each ending with `<name>: N passed, N
# failed`: the three language verifiers, and `structured`, the Python structured-output checker
# (python/check_structured.py, spec/STRUCTURED-OUTPUT.md) in the same venv.
#   VERIFIERS_VENV   where the Python venv lives (default: conformance/verifiers/.venv)
#   PYTHON           interpreter used to create it (default: python3; needs 3.11+)
#   VERIFIERS_GO_BIN where the Go verifier binary is built (default: $VERIFIERS_VENV/bin/go-verify)
# node_modules lives in conformance/verifiers/js/ (npm ci needs it beside package-lock.json).
# The Go module (go/go.mod + go.sum) is fetched from the Go module proxy with `go mod download`.

VERIFIERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VERIFIERS_VENV=${VERIFIERS_VENV:-$VERIFIERS_DIR/.venv}
VERIFIERS_GO_BIN=${VERIFIERS_GO_BIN:-$VERIFIERS_VENV/bin/go-verify}
VERIFIER_LANGS="python js go structured"

build_envs() {
    echo "== building Python environment (venv + pip install -r python/requirements.txt -r python/requirements-structured.txt)"
    if [ ! -x "$VERIFIERS_VENV/bin/python" ]; then
        "${PYTHON:-python3}" -m venv "$VERIFIERS_VENV"
    fi
    "$VERIFIERS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$VERIFIERS_DIR/python/requirements.txt" -r "$VERIFIERS_DIR/python/requirements-structured.txt"
    echo "== building Node environment (npm ci)"
    (cd "$VERIFIERS_DIR/js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "== building Go verifier (go mod download, go build)"
    mkdir -p "$(dirname "$VERIFIERS_GO_BIN")"
    (cd "$VERIFIERS_DIR/go" && go mod download && go build -o "$VERIFIERS_GO_BIN" .)
}

run_python_verifier() { "$VERIFIERS_VENV/bin/python" "$VERIFIERS_DIR/python/verify.py" "$1"; }
run_js_verifier() { node "$VERIFIERS_DIR/js/verify.mjs" "$1"; }
run_go_verifier() { "$VERIFIERS_GO_BIN" "$1"; }
run_structured_verifier() { "$VERIFIERS_VENV/bin/python" "$VERIFIERS_DIR/python/check_structured.py" "$1"; }
