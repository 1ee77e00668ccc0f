#!/usr/bin/env bash
# Suite "structured": the structured-output grammar against the real tool-schema generators.
#
# Provisions (idempotently) a venv at "$JC_CACHE/structured-venv" with Pydantic v2, OpenAI's
# Python SDK (its strict function-calling schema), jsonschema and blake3, all pinned. Then:
#   1. crates/jouleclaw-structured/tests/corpus/tool_models.py writes the tool-call corpus
#      (33 Pydantic tool models, their `model_json_schema()` and OpenAI strict schemas, valid
#      calls from `model_dump_json()`, mutated calls with their first impossible byte, and
#      jsonschema's outcome for each);
#   2. the ignored test tests/tool_corpus.rs checks the grammar on that corpus, byte by byte;
#   3. conformance/verifiers/python/check_structured.py checks both structured-output vector
#      files with jsonschema.
# Closing line: `structured: N passed, N failed`. Exit 3 with `NOT RUN: structured: ...` when a
# prerequisite cannot be provisioned. Bounded: every step runs under `timeout` (about 1 minute
# with a warm venv and target dir).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(pwd)/target}"
JC_CACHE="${JC_CACHE:-$CARGO_TARGET_DIR/jc-cache}"
mkdir -p "$JC_CACHE/structured"

not_run() {
    echo "NOT RUN: structured: $1"
    exit 3
}

command -v python3 >/dev/null || not_run "python3 missing"
python3 -c 'import ensurepip, venv' 2>/dev/null || {
    [ "$(id -u)" = 0 ] || not_run "python3-venv missing and not root to install it"
    timeout 600 apt-get update -qq && timeout 900 apt-get install -y -qq python3-venv ||
        not_run "apt-get install python3-venv failed"
}
venv="$JC_CACHE/structured-venv"
reqs="pydantic==2.14.4 openai==3.57.0 jsonschema==4.26.0 blake3==1.0.11"
if [ "$(cat "$venv/.jc-reqs" 2>/dev/null)" != "$reqs" ]; then
    rm -rf "$venv"
    timeout 300 python3 -m venv "$venv" || not_run "python3 -m venv failed"
    # shellcheck disable=SC2086
    timeout 900 "$venv/bin/pip" install -q $reqs || not_run "pip install $reqs failed"
    echo "$reqs" >"$venv/.jc-reqs"
fi

passed=0
failed=0
step() {
    local name=$1
    shift
    if "$@"; then
        echo "ok: $name"
        passed=$((passed + 1))
    else
        echo "FAIL: $name"
        failed=$((failed + 1))
    fi
}

corpus="$JC_CACHE/structured/tool-corpus.json"
rm -f "$corpus"
step "tool corpus generated from Pydantic and OpenAI strict schemas" \
    timeout 300 "$venv/bin/python" crates/jouleclaw-structured/tests/corpus/tool_models.py "$corpus"
if [ -f "$corpus" ]; then
    step "tool corpus: grammar vs jsonschema, byte by byte" \
        env JOULECLAW_TOOL_CORPUS="$corpus" timeout 900 cargo test -q -p jouleclaw-structured \
        --test tool_corpus -- --ignored --nocapture
else
    echo "FAIL: tool corpus: no corpus to check"
    failed=$((failed + 1))
fi
step "structured-output vectors vs jsonschema (check_structured.py)" \
    timeout 300 "$venv/bin/python" conformance/verifiers/python/check_structured.py conformance

echo "structured: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
