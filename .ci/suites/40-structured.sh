#!/usr/bin/env bash
# Suite "structured": the structured-output grammar against the real tool-schema generators.
#
# Provisions (idempotently) a venv at "$JC_CACHE/structured-venv" with Pydantic v2, OpenAI's
# Python SDK (its strict function-calling schema), jsonschema and blake3, all pinned. Then:
#   1. crates/jouleclaw-structured/tests/corpus/tool_models.py writes the tool-call corpus
#      (34 Pydantic tool models, their `model_json_schema()` and OpenAI strict schemas, valid
#      calls from `model_dump_json()`, mutated calls with their first impossible byte, and
#      jsonschema's outcome for each);
#      plus, when npm is there, 9 Zod 4 models (`z.toJSONSchema()`, zod from npm, pinned,
#      installed under "$JC_CACHE/structured-npm"; without npm the suite says so and goes on);
#   2. the ignored test tests/it/tool_corpus.rs checks the grammar on that corpus, byte by byte;
#   3. the Berkeley Function Calling Leaderboard's function schemas (PyPI bfcl-eval, pinned by
#      version and SHA-256, downloaded without its dependencies), put in OpenAI's form by BFCL's
#      own converter with their ground-truth calls (tests/corpus/bfcl_corpus.py): at least 95 %
#      must compile as written and every call agree with jsonschema (tests/it/tool_corpus.rs);
#   4. 22 MCP servers from npm (pinned, install scripts disabled) are started over stdio, each
#      in a network namespace of its own with no network (unshare -n, as root), and asked only
#      tools/list (tests/corpus/mcp_tools.mjs; servers that will not start without an API key
#      get a placeholder one, never used); the ignored test tests/it/mcp_toolsets.rs measures the
#      compile rate of the distinct input schemas as written (at least 99 %), compiles each
#      list as one toolset and checks valid calls, an unknown name, off-schema and mutated
#      arguments against jsonschema, in every chunking;
#   5. conformance/verifiers/python/check_structured.py checks both structured-output vector
#      files with jsonschema.
# Closing line: `structured: N passed, N failed`. Exit 3 with `NOT RUN: structured: ...` when a
# prerequisite cannot be provisioned. Bounded: every step runs under `timeout` (about 1 minute
# with a warm venv, npm folders and target dir; the first run installs the MCP servers' ~570 MB
# of packages, a few minutes).
set -euo pipefail
. "$(dirname "$0")/standalone.bash"
jc_standalone structured
mkdir -p "$JC_CACHE/structured"

command -v python3 >/dev/null || not_run "python3 missing"
python3 -c 'import ensurepip, venv' 2>/dev/null || {
    [ "$(id -u)" = 0 ] || not_run "python3-venv missing and not root to install it"
    timeout 600 apt-get update -qq && timeout 900 apt-get install -y -qq python3-venv ||
        not_run "apt-get install python3-venv failed"
}
venv="$JC_CACHE/structured-venv"
reqs="pydantic==2.14.4 openai==3.57.0 jsonschema==4.26.0 blake3==1.0.11"
jc_pinned_venv not_run "$venv" "$reqs" "$reqs" 900

BFCL_VERSION=2026.3.23
BFCL_SHA256=3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a

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

zod_args=()
npmdir="$JC_CACHE/structured-npm"
if command -v npm >/dev/null && command -v node >/dev/null; then
    if [ "$(cat "$npmdir/.jc-reqs" 2>/dev/null)" != "zod@4.6.7" ]; then
        rm -rf "$npmdir" && mkdir -p "$npmdir"
        (cd "$npmdir" && timeout 300 npm install --no-audit --no-fund --loglevel=error zod@4.6.7 >/dev/null) &&
            echo "zod@4.6.7" >"$npmdir/.jc-reqs"
    fi
    if [ -f "$npmdir/.jc-reqs" ]; then
        # ESM resolves packages from the script's own folder: run a copy beside node_modules.
        cp crates/jouleclaw-structured/tests/corpus/zod_models.mjs "$npmdir/"
        rm -f "$JC_CACHE/structured/zod.json"
        step "Zod models generated (z.toJSONSchema)" \
            timeout 120 node "$npmdir/zod_models.mjs" "$JC_CACHE/structured/zod.json"
        [ -s "$JC_CACHE/structured/zod.json" ] && zod_args=(--zod "$JC_CACHE/structured/zod.json")
    else
        echo "FAIL: npm install zod@4.6.7"
        failed=$((failed + 1))
    fi
else
    echo "note: no npm/node: the corpus has no Zod models"
fi

corpus="$JC_CACHE/structured/tool-corpus.json"
rm -f "$corpus"
step "tool corpus generated from Pydantic, OpenAI strict schemas and Zod" \
    timeout 300 "$venv/bin/python" crates/jouleclaw-structured/tests/corpus/tool_models.py "$corpus" "${zod_args[@]}"
if [ -f "$corpus" ]; then
    zod_env=()
    [ ${#zod_args[@]} -gt 0 ] && zod_env=(JOULECLAW_TOOL_CORPUS_ZOD=1)
    step "tool corpus: grammar vs jsonschema, byte by byte" \
        env JOULECLAW_TOOL_CORPUS="$corpus" "${zod_env[@]}" timeout 900 cargo test -q -p jouleclaw-structured \
        --test it -- --ignored --nocapture tool_corpus::the_generated_tool_corpus
else
    echo "FAIL: tool corpus: no corpus to check"
    failed=$((failed + 1))
fi
# Third-party function schemas: BFCL's, from the PyPI package bfcl-eval (the wheel is only
# downloaded and read as a zip file: its dependencies, torch among them, are not installed).
bfcl_whl="$JC_CACHE/structured/bfcl_eval-$BFCL_VERSION-py3-none-any.whl"
if ! echo "$BFCL_SHA256  $bfcl_whl" | sha256sum -c --status 2>/dev/null; then
    rm -f "$bfcl_whl"
    timeout 300 "$venv/bin/pip" download -q --no-deps --only-binary=:all: -d "$JC_CACHE/structured" \
        "bfcl-eval==$BFCL_VERSION" || true
fi
bfcl="$JC_CACHE/structured/bfcl-corpus.json"
rm -f "$bfcl"
if echo "$BFCL_SHA256  $bfcl_whl" | sha256sum -c --status 2>/dev/null; then
    step "BFCL corpus generated (bfcl-eval $BFCL_VERSION, its convert_to_tool)" \
        timeout 300 "$venv/bin/python" \
        crates/jouleclaw-structured/tests/corpus/bfcl_corpus.py "$bfcl_whl" "$bfcl"
    if [ -f "$bfcl" ]; then
        step "BFCL corpus: at least 95 % compile as written, every call agrees with jsonschema" \
            env JOULECLAW_BFCL_CORPUS="$bfcl" timeout 900 cargo test -q -p jouleclaw-structured \
            --test it -- --ignored --nocapture tool_corpus::third_party
    fi
else
    echo "FAIL: pip download bfcl-eval==$BFCL_VERSION (sha256 $BFCL_SHA256)"
    failed=$((failed + 1))
fi
# Real MCP servers' tool lists (pinned npm packages, installed with their install scripts
# disabled; each started over stdio without network and asked only tools/list): the compile
# rate as written and the whole-toolset routing (tests/it/mcp_toolsets.rs). A package that is not
# served, or a server that does not answer, fails the suite.
MCP_PKGS="@modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-sequential-thinking@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31 @notionhq/notion-mcp-server@2.5.2 @antv/mcp-server-chart@0.9.10 @playwright/mcp@0.0.83 @modelcontextprotocol/server-github@2025.4.8 @modelcontextprotocol/server-puppeteer@2025.5.12 @modelcontextprotocol/server-postgres@0.6.2 @upstash/context7-mcp@4.1.1 @wonderwhy-er/desktop-commander@0.2.52 chrome-devtools-mcp@1.11.0 @modelcontextprotocol/server-gitlab@2025.4.25 @modelcontextprotocol/server-brave-search@0.6.2 @modelcontextprotocol/server-google-maps@0.6.2 @modelcontextprotocol/server-slack@2025.4.25 exa-mcp-server@3.4.1 tavily-mcp@0.2.22 firecrawl-mcp@3.26.0 @agent-infra/mcp-server-commands@1.2.18 @modelcontextprotocol/server-everart@0.6.2"
# How each is started (PACKAGE=ARGS, or PACKAGE+VAR=VALUE: a placeholder key, never used).
MCP_SERVERS=(
    @modelcontextprotocol/server-memory
    @modelcontextprotocol/server-sequential-thinking
    @modelcontextprotocol/server-everything
    @notionhq/notion-mcp-server
    @antv/mcp-server-chart
    @playwright/mcp
    @modelcontextprotocol/server-github
    @modelcontextprotocol/server-puppeteer
    "@modelcontextprotocol/server-postgres=postgresql://127.0.0.1:1/none"
    @upstash/context7-mcp
    @wonderwhy-er/desktop-commander
    chrome-devtools-mcp
    "@modelcontextprotocol/server-gitlab+GITLAB_PERSONAL_ACCESS_TOKEN=unused"
    "@modelcontextprotocol/server-brave-search+BRAVE_API_KEY=unused"
    "@modelcontextprotocol/server-google-maps+GOOGLE_MAPS_API_KEY=unused"
    "@modelcontextprotocol/server-slack+SLACK_BOT_TOKEN=unused+SLACK_TEAM_ID=unused"
    "exa-mcp-server+EXA_API_KEY=unused"
    "tavily-mcp+TAVILY_API_KEY=unused"
    "firecrawl-mcp+FIRECRAWL_API_KEY=unused"
    @agent-infra/mcp-server-commands
    "@modelcontextprotocol/server-everart+EVERART_API_KEY=unused"
)
mcpdir="$JC_CACHE/structured-mcp"
if command -v npm >/dev/null && command -v node >/dev/null; then
    if [ "$(cat "$mcpdir/.jc-reqs" 2>/dev/null)" != "$MCP_PKGS" ]; then
        rm -rf "$mcpdir" && mkdir -p "$mcpdir"
        # shellcheck disable=SC2086
        (cd "$mcpdir" && echo '{"name":"jc-mcp-corpus","private":true}' >package.json &&
            timeout 900 npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
                $MCP_PKGS >/dev/null) && echo "$MCP_PKGS" >"$mcpdir/.jc-reqs"
    fi
    mcp="$JC_CACHE/structured/mcp-tools.json"
    rm -f "$mcp"
    if [ -f "$mcpdir/.jc-reqs" ]; then
        fsroot=$(mktemp -d)
        step "MCP tool lists fetched (22 servers from npm, no network, tools/list only)" \
            timeout 600 node crates/jouleclaw-structured/tests/corpus/mcp_tools.mjs "$mcpdir/node_modules" \
            "@modelcontextprotocol/server-filesystem=$fsroot" "${MCP_SERVERS[@]}" "$mcp"
        rm -rf "$fsroot"
        [ -s "$mcp" ] && step "MCP corpus: compile rate as written, routing by name, calls agree with jsonschema" \
            env JOULECLAW_MCP_TOOLS="$mcp" timeout 600 cargo test -q -p jouleclaw-structured \
            --test it -- --ignored --nocapture mcp_toolsets::
    else
        echo "FAIL: npm install $MCP_PKGS"
        failed=$((failed + 1))
    fi
else
    echo "FAIL: MCP toolsets: npm and node are needed to fetch the MCP servers"
    failed=$((failed + 1))
fi
step "structured-output vectors vs jsonschema (check_structured.py)" \
    timeout 300 "$venv/bin/python" conformance/verifiers/python/check_structured.py conformance

echo "structured: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
