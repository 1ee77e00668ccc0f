#!/usr/bin/env bash
# The demo report rendered in headless Chromium (Debian's chromium): one column per window, the
# verification badge, no script run and nothing fetched (tests/browser/report.mjs, 90 s bound).
set -euo pipefail
. scripts/suite-lib.sh
jc_suite browser
command -v node >/dev/null || jc_apt_install nodejs || jc_not_run "node is missing and cannot be installed"
command -v chromium >/dev/null || jc_apt_install chromium || jc_not_run "chromium is missing and cannot be installed"
jc_check "cargo build --bin jouleclaw" cargo build -q --bin jouleclaw
jc_check "report in headless Chromium" node tests/browser/report.mjs \
    --jouleclaw "$CARGO_TARGET_DIR/debug/jouleclaw" --chromium "$(command -v chromium)" \
    --screenshot "$JC_CACHE/browser-report.png"
jc_close
