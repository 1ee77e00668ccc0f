#!/usr/bin/env bash
# live-journal: `jouleclaw live` into a local 3-node JetStream cluster that goes down before the
# run ends (the run exits 0 with its batches journaled), a second run refused on the
# undelivered journal, `jouleclaw journal replay`, `audit --nats` complete with the count live
# minted; then `kill -9` of a run mid-write, replay, and nothing stored twice; then a run that
# starts with the cluster down; then a full disk for a moment under the journal (a small tmpfs)
# and the replay of what it left. Bounded: every wait has a timeout; about 2 minutes.
set -euo pipefail
name=live-journal
: "${CARGO_TARGET_DIR:?}"
server=${JOULECLAW_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
if [ ! -x "$server" ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -qq nats-server >/dev/null 2>&1 || true
    fi
    server=$(command -v nats-server || echo /usr/sbin/nats-server)
    if [ ! -x "$server" ]; then
        echo "NOT RUN: $name: nats-server is not installed and cannot be provisioned"
        exit 3
    fi
fi
cargo build -q --bin jouleclaw
jc="$CARGO_TARGET_DIR/debug/jouleclaw"
work=$(mktemp -d)
cluster=crates/jouleclaw-live/scripts/cluster.sh
base=$($cluster base)
trap '$cluster stop "$work/c" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
passed=0
failed=0
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
        echo "ok: $what"
    else
        failed=$((failed + 1))
        echo "FAILED: $what"
    fi
}
# One node's /healthz answer (its monitoring port is the client port + 20): "ok" once
# JetStream has a meta leader, so that a stream with 3 replicas can be created.
healthz() {
    (exec 3<>"/dev/tcp/127.0.0.1/$(($1 + 20))" \
        && printf 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3 \
        && timeout 5 cat <&3) 2>/dev/null | grep -q '"status": *"ok"'
}
# Starts the cluster and waits (at most 120 s) until every node says JetStream is ready: the
# client ports alone are open seconds before a loaded machine elects the meta leader, and a run
# started then journals everything (seen in CI on nats-server v2.15.2).
start_cluster() {
    url=$($cluster start "$work/c" "$base")
    for _ in $(seq 1 600); do
        if healthz "$base" && healthz "$((base + 1))" && healthz "$((base + 2))"; then
            return 0
        fi
        for i in 0 1 2; do
            if ! kill -0 "$(cat "$work/c/n$i.pid")" 2>/dev/null; then
                echo "node n$i of the cluster exited; its log:" >&2
                tail -n 20 "$work/c/n$i.log" >&2 || true
                return 1
            fi
        done
        sleep 0.2
    done
    echo "the cluster did not become ready within 120 s; its logs:" >&2
    tail -n 20 "$work"/c/n*.log >&2 || true
    return 1
}
stop_cluster() {
    $cluster stop "$work/c"
    sleep 1
}

# 0. Metrics: scraped while a file-sink run lasts; a non-loopback address is refused.
"$jc" live --streams 3 --seconds 4 --sink "file:$work/files" --metrics 127.0.0.1:0 \
    >"$work/m.out" 2>"$work/m.err" &
mlive=$!
port=""
for _ in $(seq 1 100); do
    port=$(sed -n 's|^metrics: http://127.0.0.1:\([0-9]*\)/metrics$|\1|p' "$work/m.err")
    [ -n "$port" ] && break
    sleep 0.1
done
sleep 1.5
scrape() {
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    timeout 10 cat <&3
    exec 3<&-
}
scrape >"$work/metrics.txt" 2>/dev/null || true
wait "$mlive" || true
check "metrics: the open streams" grep -q '^jouleclaw_streams_open 3$' "$work/metrics.txt"
check "metrics: windows counted" grep -qE '^jouleclaw_windows_total [1-9]' "$work/metrics.txt"
check "metrics: refusals by code" grep -q 'jouleclaw_ticks_refused_total{code="window_closed"}' "$work/metrics.txt"
check "metrics: tick-to-yield" grep -q 'jouleclaw_tick_to_yield_seconds{quantile="0.99"}' "$work/metrics.txt"
windows=$(sed -n 's/^jouleclaw_windows_total \([0-9]*\).*/\1/p' "$work/metrics.txt")
verdicts=$(awk '/^jouleclaw_window_verdicts_total\{/ { n += $2 } END { print n + 0 }' "$work/metrics.txt")
findings=$(awk '/^jouleclaw_window_findings_total\{/ { n += $2 } END { print n + 0 }' "$work/metrics.txt")
check "metrics: verdicts by kind add up to the windows" test -n "$windows" -a "$verdicts" = "$windows" -a "$findings" = "$windows"
check "metrics: the barge-ins' yield verdicts" grep -qE '^jouleclaw_window_verdicts_total\{verdict="yield"\} [1-9]' "$work/metrics.txt"
check "metrics: conforming windows counted by finding" grep -qE '^jouleclaw_window_findings_total\{finding="conforming"\} [1-9]' "$work/metrics.txt"
acks=$(sed -n 's/^jouleclaw_sink_ack_latency_seconds_count \([0-9]*\).*/\1/p' "$work/metrics.txt")
inf=$(sed -n 's/^jouleclaw_sink_ack_latency_seconds_bucket{le="+Inf"} \([0-9]*\).*/\1/p' "$work/metrics.txt")
check "metrics: the sink-ack histogram's +Inf bucket is its count" test -n "$acks" -a "$acks" = "$inf"
# The run's end is scraped (--metrics-linger), and says what live's summary says.
"$jc" live --streams 3 --seconds 2 --sink "file:$work/files3" --metrics 127.0.0.1:0 --metrics-linger 10 \
    >"$work/m3.out" 2>"$work/m3.err" &
mlive=$!
port=""
for _ in $(seq 1 300); do
    grep -q "^ended" "$work/m3.out" 2>/dev/null && \
        port=$(sed -n 's|^metrics: http://127.0.0.1:\([0-9]*\)/metrics$|\1|p' "$work/m3.err") && break
    sleep 0.1
done
scrape >"$work/metrics3.txt" 2>/dev/null || true
wait "$mlive" || true
minted3=$(sed -n 's/^windows *\([0-9]*\) .*/\1/p' "$work/m3.out")
sealed3=$(sed -n 's/^streams .* \([0-9]*\) sealed durable.*/\1/p' "$work/m3.out")
check "metrics at the run's end: every window live counted" grep -q "^jouleclaw_windows_total $minted3\$" "$work/metrics3.txt"
check "metrics at the run's end: streams sealed as live says (durable)" grep -q "^jouleclaw_streams_sealed_total $sealed3\$" "$work/metrics3.txt"
check "metrics: the journal and drain split exported" grep -q "^jouleclaw_receipts_unknown_fate 0" "$work/metrics3.txt"
rc=0
"$jc" live --streams 1 --seconds 1 --sink "file:$work/files2" --metrics 0.0.0.0:9464 >/dev/null 2>&1 || rc=$?
check "metrics on a non-loopback address is a usage error" test "$rc" = 2
check "two live runs into one folder: the second is refused" bash -c "
    '$jc' live --streams 2 --seconds 3 --sink 'file:$work/shared' >/dev/null 2>&1 &
    first=\$!; sleep 1
    rc=0; '$jc' live --streams 2 --seconds 1 --sink 'file:$work/shared' --pub-out '$work/p2' >/dev/null 2>'$work/shared.err' || rc=\$?
    wait \$first; test \$rc = 1 && grep -q sink_busy '$work/shared.err'"

start_cluster
"$jc" keygen --out "$work/k" --pub-out "$work/k.pub" >/dev/null

# Waits (at most 60 s) until the run's progress on FILE shows a durable batch.
first_durable() {
    for _ in $(seq 1 600); do
        if grep -q "durable=[1-9]" "$1" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# An 8 s run to the cluster (3 replicas, a checkpoint every 5 windows) with a journal, bounded
# at 120 s: live_to_cluster STREAMS JOURNAL DRAIN_SECS PREFIX NAME; its exit status in `rc`,
# its output in $work/NAME.out and $work/NAME.err.
live_to_cluster() {
    rc=0
    timeout 120 "$jc" live --streams "$1" --seconds 8 --checkpoint-every 5 --sink "$url" --replicas 3 \
        --key "$work/k" --journal "$2" --drain-secs "$3" --prefix "$4" >"$work/$5.out" 2>"$work/$5.err" || rc=$?
}

# 1. The cluster down from the first durable batch to past the end of the run.
(first_durable "$work/live1.err" && stop_cluster) &
stopper=$!
live_to_cluster 12 "$work/j1" 3 down live1
srrc=0
wait "$stopper" || srrc=$?
cat "$work/live1.out"
check "the run had a durable batch before the cluster went down" test "$srrc" = 0
[ "$srrc" = 0 ] || tail -n 5 "$work/live1.err"
check "live exits 0 with its batches journaled" test "$rc" = 0
check "live says they are journaled and how to replay" grep -q "JOURNALED.*journal replay" "$work/live1.out"
minted=$(sed -n 's/^receipts *\([0-9]*\) minted.*/\1/p' "$work/live1.out")
check "live minted 12 x 40 receipts" test "$minted" = 480
sum=$(sha256sum "$work/j1")
rc=0
timeout 60 "$jc" live --streams 1 --seconds 1 --sink "$url" --key "$work/k" --journal "$work/j1" \
    >/dev/null 2>"$work/live2.err" || rc=$?
check "a second run on the undelivered journal is refused (exit 1)" test "$rc" = 1
check "and names the replay" grep -q "journal replay" "$work/live2.err"
check "and leaves the journal as it was" test "$(sha256sum "$work/j1")" = "$sum"
rc=0
timeout 60 "$jc" live --streams 1 --seconds 1 --sink "$url" --key "$work/k" >/dev/null 2>&1 || rc=$?
check "a NATS run without --journal is a usage error" test "$rc" = 2
rc=0
timeout 60 "$jc" live --streams 1 --seconds 5 --sink "nats://127.0.0.1:notaport" --journal "$work/jbad" \
    --pub-out "$work/bad.pub" >/dev/null 2>&1 || rc=$?
check "a bad NATS URL is a usage error before anything runs or is written" \
    test "$rc" = 2 -a ! -e "$work/jbad" -a ! -e "$work/bad.pub"
start_cluster
rc=0
timeout 180 "$jc" journal replay "$work/j1" --sink "$url" --replicas 3 >"$work/replay1.out" 2>&1 || rc=$?
cat "$work/replay1.out"
check "replay exits 0" test "$rc" = 0
rc=0
timeout 120 "$jc" audit --pub "$work/k.pub" --nats "$url" --all >"$work/audit1.out" 2>&1 || rc=$?
tail -2 "$work/audit1.out"
check "audit is complete" test "$rc" = 0
check "with every receipt live minted" grep -q "12 streams: 12 complete, 0 incomplete; 480 receipts verified" "$work/audit1.out"
rc=0
timeout 60 "$jc" audit --pub "$work/k.pub" --nats "$url" --stream down-3 >"$work/audit2.out" 2>&1 || rc=$?
check "audit --stream finds the one stream" grep -q "1 streams: 1 complete" "$work/audit2.out"
rc=0
timeout 60 "$jc" journal replay "$work/j1" --sink "$url" >"$work/replay2.out" 2>&1 || rc=$?
check "a second replay has nothing left to do" grep -q "replayed    0 undelivered" "$work/replay2.out"

# 2. kill -9 of a run in the middle, with the cluster down so that batches wait in the journal.
"$jc" live --streams 12 --seconds 60 --checkpoint-every 5 --sink "$url" --replicas 3 \
    --key "$work/k" --journal "$work/j2" --prefix killed >/dev/null 2>"$work/live3.err" &
live=$!
first_durable "$work/live3.err" || true
stop_cluster
sleep 3
kill -9 "$live"
wait "$live" 2>/dev/null || true
start_cluster
rc=0
timeout 180 "$jc" journal replay "$work/j2" --sink "$url" >"$work/replay3.out" 2>&1 || rc=$?
cat "$work/replay3.out"
check "replay after kill -9 exits 0" test "$rc" = 0
rc=0
timeout 120 "$jc" audit --pub "$work/k.pub" --nats "$url" --all >"$work/audit3.out" 2>&1 || rc=$?
tail -2 "$work/audit3.out"
check "the killed streams are reported, unsealed" grep -q "24 streams: 12 complete, 12 incomplete" "$work/audit3.out"
check "nothing stored twice, nothing else wrong" \
    bash -c "! grep -E '^    ' '$work/audit3.out' | grep -v -E 'unsealed|no_final_seal'"
# 3. The cluster down when `live` starts: its batches wait in the journal and go to the cluster
#    once it is up (started 3 s into the run); nothing is journaled at the end.
stop_cluster
(sleep 3 && start_cluster >/dev/null) &
starter=$!
live_to_cluster 3 "$work/j3" 60 cold live4
wait "$starter" || true
cat "$work/live4.out"
check "live started with the cluster down exits 0" test "$rc" = 0
check "and its batches reached the cluster once it was up" grep -q "^ended       DURABLE" "$work/live4.out"
for i in 0 1 2; do
    rc=0
    timeout 60 "$jc" audit --pub "$work/k.pub" --nats "$url" --stream "cold-$i" >"$work/audit4.out" 2>&1 || rc=$?
    check "audit finds cold-$i complete" grep -q "1 streams: 1 complete" "$work/audit4.out"
done
# 4. A full disk for a moment under the journal: a small tmpfs (a real file system that fills
#    up) filled while the run writes, freed 1.5 s later. Every failed write is cut back and
#    counted; whatever the run's exit, the journal it leaves is one a replay reads (never
#    journal_corrupt), and a run that exits 0 leaves one the replay empties. Needs root (mount).
small="$work/small"
mkdir -p "$small"
if mount -t tmpfs -o size=16m tmpfs "$small" 2>/dev/null; then
    trap 'umount "$small" 2>/dev/null || true; $cluster stop "$work/c" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
    check "journal on a full tmpfs: the crate's full-disk tests" \
        cargo test -q -p jouleclaw-live --test it -- --ignored journal::
    (first_durable "$work/live5.err" && { dd if=/dev/zero of="$small/filler" bs=64k 2>/dev/null || true
        sleep 1.5; rm -f "$small/filler"; }) &
    filler=$!
    live_to_cluster 20 "$small/j5" 20 full live5
    wait "$filler" || true
    cat "$work/live5.out"
    check "the full disk was hit and every failed write cut back" grep -q "writes failed and were cut back" "$work/live5.out"
    check "live exits 0 or 1 (receipts lost to the full disk are named), never 2" test "$rc" = 0 -o "$rc" = 1
    rrc=0
    timeout 180 "$jc" journal replay "$small/j5" --sink "$url" >"$work/replay5.out" 2>&1 || rrc=$?
    cat "$work/replay5.out"
    check "the journal a full disk hit replays (exit 0, nothing left)" test "$rrc" = 0
    check "the replay read it whole" grep -q "0 torn bytes cut off" "$work/replay5.out"
    if [ "$rc" = 0 ]; then
        check "live's exit 0 is backed by its journal" grep -q " 0 left" "$work/replay5.out"
    fi
    umount "$small"
else
    echo "not run: section 4 (full disk): a tmpfs cannot be mounted here (needs root)"
fi
echo "$name: $passed passed, $failed failed"
test "$failed" = 0
