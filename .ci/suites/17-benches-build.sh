#!/usr/bin/env bash
# The benches compile (no timing: performance is measured by hand, benches/README.md).
set -euo pipefail
. scripts/suite-lib.sh
jc_suite benches-build
jc_check "cargo bench --workspace --no-run" cargo bench -q --workspace --no-run
jc_close
