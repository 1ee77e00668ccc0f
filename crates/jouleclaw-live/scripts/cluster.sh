#!/usr/bin/env bash
# Starts (or stops) a 3-node NATS JetStream cluster on loopback for `jouleclaw live` and
# `jouleclaw audit`: client ports BASE, BASE+1, BASE+2; route ports BASE+10..12; monitoring
# (HTTP, for `/healthz`: ok once JetStream has a meta leader) on BASE+20..22; file storage under
# DIR. Usage: cluster.sh start DIR [BASE]   |   cluster.sh stop DIR   |   cluster.sh base
# `base` prints a BASE whose nine ports nobody listens on, below the kernel's ephemeral port range
# (/proc/sys/net/ipv4/ip_local_port_range): the local port of any outgoing connection on the
# machine comes from that range and could take a node's port before the node binds it, or
# between a stop and a restart; a fresh cluster with one node missing never elects its
# JetStream meta leader (every node named in the routes must be up on a first start).
# The server is $JOULECLAW_NATS_SERVER when set, else nats-server on PATH (Debian's).
set -eu
cmd=${1:?start, stop or base}
if [ "$cmd" = base ]; then
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    top=$((low - 23))
    [ "$top" -gt 11000 ] || top=32745
    taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
    for _ in $(seq 1 50); do
        try=$((10000 + RANDOM % (top - 10000)))
        free=1
        for off in 0 1 2 10 11 12 20 21 22; do
            if taken $((try + off)); then
                free=0
                break
            fi
        done
        if [ "$free" = 1 ]; then
            echo "$try"
            exit 0
        fi
    done
    echo "cluster.sh: no free loopback ports for a 3-node cluster" >&2
    exit 1
fi
dir=${2:?folder}
base=${3:-4222}
server=${JOULECLAW_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
case "$cmd" in
start)
    mkdir -p "$dir"
    routes="nats-route://127.0.0.1:$((base + 10)), nats-route://127.0.0.1:$((base + 11)), nats-route://127.0.0.1:$((base + 12))"
    for i in 0 1 2; do
        cat > "$dir/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:$((base + i))
http: 127.0.0.1:$((base + 20 + i))
jetstream { store_dir: "$dir/n$i" }
cluster { name: jc, listen: 127.0.0.1:$((base + 10 + i)), routes: [$routes] }
CONF
        "$server" -c "$dir/n$i.conf" > "$dir/n$i.log" 2>&1 &
        echo $! > "$dir/n$i.pid"
    done
    echo "nats://127.0.0.1:$base,nats://127.0.0.1:$((base + 1)),nats://127.0.0.1:$((base + 2))"
    ;;
stop)
    # Every node is signalled first, so the cluster goes down at once (not node by node,
    # which leaves a last node taking proposals it cannot commit for as long as the others
    # take to exit); then a bounded wait (10 s for each, then SIGKILL), so that the stores can
    # be removed as soon as this returns.
    pids=""
    for i in 0 1 2; do
        if [ -f "$dir/n$i.pid" ]; then
            pid=$(cat "$dir/n$i.pid")
            kill "$pid" 2>/dev/null || true
            pids="$pids $pid"
            rm -f "$dir/n$i.pid"
        fi
    done
    for pid in $pids; do
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    done
    ;;
*)
    echo "usage: $0 start DIR [BASE] | stop DIR | base" >&2
    exit 2
    ;;
esac
