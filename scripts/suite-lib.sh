# Helpers for the suites in .ci/suites/ (sourced, not run). The convention every suite follows
# (README, "Testing"): run from the repository root with CARGO_TARGET_DIR and JC_CACHE set;
# provision what it needs itself, idempotently, from the registries; close with exactly one line
# `<name>: N passed, N failed`; exit non-zero on a failure; print `NOT RUN: <name>: <reason>` and
# exit 3 when a prerequisite cannot be provisioned. Every suite is bounded in time.
#
#   . scripts/suite-lib.sh
#   jc_suite NAME                 sets the suite's name and the counters
#   jc_check LABEL CMD...         runs one check (bounded by JC_CHECK_TIMEOUT, default 1800 s)
#   jc_need_apt CMD PACKAGE...    CMD on PATH, else Debian's PACKAGEs (root on Debian), else 1
#   jc_not_run REASON             prints NOT RUN and exits 3
#   jc_close                      prints the closing line; exits 1 if a check failed

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export JC_CACHE="${JC_CACHE:-$CARGO_TARGET_DIR/jc-cache}"
mkdir -p "$JC_CACHE/bin"
case ":$PATH:" in *":$JC_CACHE/bin:"*) ;; *) export PATH="$JC_CACHE/bin:$PATH" ;; esac

jc_suite() {
    JC_NAME=$1
    JC_PASSED=0
    JC_FAILED=0
}

jc_check() {
    local label=$1
    shift
    local start rc
    start=$(date +%s)
    echo "-- $JC_NAME: $label"
    set +e
    if declare -F "$1" >/dev/null; then
        # A shell function cannot run under timeout(1); the suite's own bound holds it.
        ( set -e; "$@" )
    else
        timeout --kill-after=30 "${JC_CHECK_TIMEOUT:-1800}" "$@"
    fi
    rc=$?
    set -e
    if [ "$rc" -eq 0 ]; then
        JC_PASSED=$((JC_PASSED + 1))
        echo "ok    $label ($(($(date +%s) - start)) s)"
    else
        JC_FAILED=$((JC_FAILED + 1))
        [ "$rc" -eq 124 ] && echo "TIMEOUT after ${JC_CHECK_TIMEOUT:-1800} s: $label"
        echo "FAIL  $label (exit $rc, $(($(date +%s) - start)) s)"
    fi
}

jc_is_root_debian() {
    [ "$(id -u)" -eq 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null
}

# apt-get update at most once an hour per cache.
jc_apt_install() {
    jc_is_root_debian || return 1
    local stamp="$JC_CACHE/apt-updated"
    if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +60 2>/dev/null)" ]; then
        apt-get update -qq >/dev/null && touch "$stamp" || return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

jc_need_apt() {
    local cmd=$1
    shift
    command -v "$cmd" >/dev/null && return 0
    [ -x "/usr/sbin/$cmd" ] && return 0
    echo "-- $JC_NAME: $cmd missing: installing Debian's $* (apt-get)"
    jc_apt_install "$@" || return 1
    command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ]
}

jc_not_run() {
    echo "NOT RUN: $JC_NAME: $1"
    exit 3
}

jc_close() {
    echo "$JC_NAME: $JC_PASSED passed, $JC_FAILED failed"
    [ "$JC_FAILED" -eq 0 ]
}

# nats-server on PATH (or /usr/sbin): present, else Debian's package, else built from the Go
# module proxy into $JC_CACHE/bin (github.com/nats-io/nats-server/v2, pinned).
JC_NATS_MODULE="github.com/nats-io/nats-server/v2@${JC_NATS_VERSION:-v2.15.2}"
jc_need_nats_server() {
    jc_need_apt nats-server nats-server && return 0
    command -v go >/dev/null || return 1
    echo "-- $JC_NAME: building nats-server from the Go module proxy ($JC_NATS_MODULE)"
    GOBIN="$JC_CACHE/bin" GOFLAGS=-mod=mod timeout 900 go install "$JC_NATS_MODULE" >/dev/null || return 1
    command -v nats-server >/dev/null
}

# A venv at $JC_CACHE/NAME-venv with pip's packages ARGS (pip install ARGS, idempotent).
jc_venv() {
    local name=$1
    shift
    local venv="$JC_CACHE/$name-venv"
    command -v python3 >/dev/null || return 1
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" || { jc_apt_install python3-venv && python3 -m venv "$venv"; } || return 1
    fi
    timeout 1800 "$venv/bin/pip" install -q --disable-pip-version-check "$@" || return 1
    JC_VENV=$venv
}
