#!/usr/bin/env bash
# The conformance vectors through the Python, Node and Go verifiers (environments from PyPI, npm
# and the Go module proxy; the venv under $JC_CACHE), then the self-test: tampered copies must
# fail in every verifier that checks them.
set -euo pipefail
. scripts/suite-lib.sh
jc_suite conformance
command -v python3 >/dev/null || jc_apt_install python3 python3-venv python3-pip \
    || jc_not_run "python3 is missing and cannot be installed"
command -v node >/dev/null || jc_apt_install nodejs npm || jc_not_run "node is missing and cannot be installed"
command -v npm >/dev/null || jc_apt_install npm || jc_not_run "npm is missing and cannot be installed"
command -v go >/dev/null || jc_apt_install golang-go || jc_not_run "go is missing and cannot be installed"
export VERIFIERS_VENV="$JC_CACHE/verifiers-venv"
jc_check "verifiers/check conformance" conformance/verifiers/check conformance
jc_check "verifiers/selftest conformance" conformance/verifiers/selftest conformance
# The Python verifier beside today's cbor2 (6.x): passes every check, or refuses to run (exit 2).
export VERIFIERS_CURRENT_VENV="$JC_CACHE/verifiers-venv-current-deps"
jc_check "verifiers/check-current-deps conformance" conformance/verifiers/check-current-deps conformance
jc_close
