#!/usr/bin/env bash
# The Go verifier's own tests (strict-vector staleness, one test per strictness rule); modules
# from the Go module proxy.
set -euo pipefail
. scripts/suite-lib.sh
jc_suite go-verifier
command -v go >/dev/null || jc_apt_install golang-go || jc_not_run "go is missing and cannot be installed"
export GOFLAGS="${GOFLAGS:-}"
jc_check "go vet ./..." bash -c 'cd conformance/verifiers/go && go vet ./...'
jc_check "go test ./..." bash -c 'cd conformance/verifiers/go && go test ./...'
jc_close
