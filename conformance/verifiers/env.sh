# Shared by `check` and `selftest`: build the two verifier environments from the registries.
#   VERIFIERS_VENV   where the Python venv lives (default: conformance/verifiers/.venv)
#   PYTHON           interpreter used to create it (default: python3; needs 3.11+)
# node_modules lives in conformance/verifiers/js/ (npm ci needs it beside package-lock.json).

VERIFIERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VERIFIERS_VENV=${VERIFIERS_VENV:-$VERIFIERS_DIR/.venv}

build_envs() {
    echo "== building Python environment (venv + pip install -r python/requirements.txt)"
    if [ ! -x "$VERIFIERS_VENV/bin/python" ]; then
        "${PYTHON:-python3}" -m venv "$VERIFIERS_VENV"
    fi
    "$VERIFIERS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$VERIFIERS_DIR/python/requirements.txt"
    echo "== building Node environment (npm ci)"
    (cd "$VERIFIERS_DIR/js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}

run_python_verifier() { "$VERIFIERS_VENV/bin/python" "$VERIFIERS_DIR/python/verify.py" "$1"; }
run_js_verifier() { node "$VERIFIERS_DIR/js/verify.mjs" "$1"; }
