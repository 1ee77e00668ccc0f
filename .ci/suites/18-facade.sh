#!/usr/bin/env bash
# The facade without default features compiles no HTTP stack, no tokio, no hound, no async-nats.
set -euo pipefail
. scripts/suite-lib.sh
jc_suite facade
no_http_stack() {
    if cargo tree -p jouleclaw-stack --no-default-features -e normal | grep -E '^[^a-z]*(hyper|tokio|hound|async-nats) '; then
        echo "jouleclaw-stack --no-default-features depends on the crates above"
        return 1
    fi
}
jc_check "cargo tree: no hyper, tokio, hound or async-nats" no_http_stack
jc_check "cargo check --no-default-features --lib" cargo check -q -p jouleclaw-stack --no-default-features --lib
jc_close
