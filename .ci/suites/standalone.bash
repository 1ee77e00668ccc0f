# Sourced (not a suite: it does not end in .sh) by the suites that provision their own tools
# without scripts/suite-lib.sh (20-wyoming.sh, 30-cascade.sh, 40-structured.sh):
#   jc_standalone NAME        to the repository root; CARGO_TARGET_DIR (default: target/) and
#                             JC_CACHE (default: $CARGO_TARGET_DIR/jc-cache) set, JC_CACHE made
#   not_run REASON            prints `NOT RUN: NAME: REASON` and exits 3
#   jc_apt_missing PKG...     installs the Debian packages named (none: nothing), as root, or
#                             not_run

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
