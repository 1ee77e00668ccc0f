#!/usr/bin/env bash
# The call registry against three real witnesses: litewitness and witnessctl (Go module
# filippo.io/torchwood v0.6.1, from the Go module proxy) with keys in ssh-agent (Debian's
# openssh-client), started on loopback by tests/registry.rs and stopped by it: registry add, run
# --registry (quorum met, a witness down, below the quorum), audit --dir --witness-policy
# (cosigned, not registered, tampered checkpoint), `live` into a JetStream server with audit --nats
# --witness-policy --registry-proofs (a swapped proof folder, a missing proof), `registry
# add-stored` of calls stored unregistered (each once; a lost proof; a folder of another seal),
# forks and re-minted calls, and a checkpoint lost after the witnesses cosigned it (`registry
# witness` brings it back: 409 at the new size, asked again). About 30 s after the
# build (the tests themselves take a few seconds; each witness request is bounded at 5 s). The
# registry tests that need no witness (concurrent submission against stand-ins, a stand-in
# witness that floods its answer with 100 valid lines backdated to 1970, a re-mint under another
# steward label, leaves beyond the checkpoint, refusals before a run) are not ignored: plain
# `cargo test` runs them.
set -euo pipefail
name=registry
cache="${JC_CACHE:?JC_CACHE is set by scripts/test-all}/registry"
mkdir -p "$cache/bin"
if ! command -v ssh-agent >/dev/null || ! command -v ssh-keygen >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq openssh-client >/dev/null
    else
        echo "NOT RUN: $name: ssh-agent/ssh-keygen missing and cannot be installed (not root on Debian)"
        exit 3
    fi
fi
# audit --nats --witness-policy reads calls back from a JetStream server (Debian's nats-server).
server=${JOULECLAW_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
if [ ! -x "$server" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq nats-server >/dev/null 2>&1 || true
    fi
    server=$(command -v nats-server || echo /usr/sbin/nats-server)
    if [ ! -x "$server" ]; then
        echo "NOT RUN: $name: nats-server is not installed and cannot be provisioned"
        exit 3
    fi
fi
export JOULECLAW_NATS_SERVER="$server"
if ! command -v go >/dev/null; then
    echo "NOT RUN: $name: no Go toolchain to install litewitness with"
    exit 3
fi
for tool in litewitness witnessctl; do
    if [ ! -x "$cache/bin/$tool" ]; then
        GOBIN="$cache/bin" timeout 600 go install "filippo.io/torchwood/cmd/$tool@v0.6.1"
    fi
done
log="$cache/test.log"
set +e
PATH="$cache/bin:$PATH" timeout 900 cargo test --test it -- --ignored registry:: 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
summary=$(grep -E '^test result: ' "$log" | tail -n 1)
passed=$(echo "$summary" | sed -nE 's/.* ([0-9]+) passed; ([0-9]+) failed.*/\1/p')
failed=$(echo "$summary" | sed -nE 's/.* ([0-9]+) passed; ([0-9]+) failed.*/\2/p')
if [ -z "$passed" ]; then
    passed=0
    failed=1
fi
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
fi
echo "$name: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
