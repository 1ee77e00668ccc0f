#!/usr/bin/env bash
# Every library crate's tests build and pass from what its package holds (`cargo package
# --list`), with no file of the repository beside it: scripts/packaged-tests assembles such a
# workspace in a temporary folder and runs `cargo test` there. A test that needs the
# repository's shared files (conformance/, examples/golden/, fuzz/) says `not run` and returns.
set -euo pipefail
. scripts/suite-lib.sh
jc_suite packaged
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
jc_check "cargo test of every library crate from its package alone" scripts/packaged-tests "$out/ws"
jc_close
