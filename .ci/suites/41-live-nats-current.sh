#!/usr/bin/env bash
# The live cluster scenarios (suite 14's tests) and the journal suite (40-live-journal) again,
# against a current nats-server (v2.15.2, built from the Go module proxy into the cache), beside
# Debian's 2.9.10 that suites 14 and 40 use: the project supports both. About 4 minutes once
# the server is built (about 1 minute).
set -euo pipefail
. scripts/suite-lib.sh
jc_suite live-nats-current
version=${JC_NATS_CURRENT:-v2.15.2}
bin="$JC_CACHE/nats-$version/bin"
if [ ! -x "$bin/nats-server" ]; then
    command -v go >/dev/null || jc_not_run "no Go toolchain to build nats-server $version"
    echo "-- $JC_NAME: building nats-server $version from the Go module proxy"
    GOBIN="$bin" GOFLAGS=-mod=mod timeout 900 go install "github.com/nats-io/nats-server/v2@$version" >/dev/null \
        || jc_not_run "nats-server $version cannot be built from the Go module proxy"
fi
export JOULECLAW_NATS_SERVER="$bin/nats-server"
jc_check "the server is $version" bash -c "'$JOULECLAW_NATS_SERVER' --version | grep -q '$version'"
jc_check "cluster scenarios on $version (release, --ignored)" \
    cargo test --release -p jouleclaw-live --test it -- --ignored cluster:: --skip live_child_killed_by_the_parent --skip subject_layout_measurement
jc_check "the journal suite on $version" bash .ci/suites/40-live-journal.sh
jc_check "jouleclaw live --registry into JetStream on $version (--ignored)" \
    cargo test -p jouleclaw-stack --test it -- --ignored live_cli::
jc_close
