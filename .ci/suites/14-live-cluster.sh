#!/usr/bin/env bash
# jouleclaw-live against real 3-node NATS JetStream clusters on loopback, release build, full
# scale (200 streams x 50 windows; the failure scenarios 40 x 20). These tests are #[ignore]d in
# plain `cargo test` (they need nats-server) and run here with --ignored. The kill -9 scenario's
# child (`live_child_killed_by_the_parent`) is not a test of its own: its parent runs it; the
# subject-layout measurement (minutes long) is run by hand. Then `jouleclaw live --registry` into
# a one-node JetStream server (tests/live_cli.rs, debug build).
set -euo pipefail
. scripts/suite-lib.sh
jc_suite live-cluster
jc_need_nats_server || jc_not_run "nats-server is missing (no Debian package, no Go toolchain to build it)"
jc_check "cluster scenarios (release, --ignored)" \
    cargo test --release -p jouleclaw-live --test it -- --ignored cluster:: --skip live_child_killed_by_the_parent --skip subject_layout_measurement
jc_check "the audit reader's memory bound (release, --ignored)" \
    cargo test --release -p jouleclaw-live --test read_bound -- --ignored
jc_check "jouleclaw live --registry into JetStream (--ignored)" \
    cargo test -p jouleclaw-stack --test it -- --ignored live_cli::
jc_check "audit --nats by one job and several give the same verdicts (--ignored)" \
    cargo test -p jouleclaw-stack --test it -- --ignored audit_jobs::
jc_close
