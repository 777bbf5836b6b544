#!/usr/bin/env bash
# Sourced by scripts/test.sh: makes sure a local 3-primary Redis Cluster
# answers on loopback and exports REDIS_CLUSTER_URL for executor-redis's
# cluster tests.
#
# The nodes run daemonized from ${TMPDIR:-/tmp}/executor-redis-cluster (one
# directory per node, ports listed in `ports`) and outlive the test run on
# purpose: a sourced file cannot own a cleanup trap, so the next run finds
# the cluster healthy and reuses it instead of starting another one. It
# stops nothing it did not start. To stop it by hand:
#   for p in $(cat ${TMPDIR:-/tmp}/executor-redis-cluster/ports); do
#     redis-cli -p "$p" shutdown nosave; done
# A cluster of your own: export REDIS_CLUSTER_URL before running test.sh.

redis_cluster_ok() { # redis_cluster_ok <port>...
    local p info
    for p in "$@"; do
        info=$(redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null) || return 1
        [[ $info == *cluster_state:ok* ]] || return 1
    done
}

redis_port_free() { # a port and its cluster bus port (+10000) take no connections
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$(($1 + 10000))") 2>/dev/null
}

ensure_redis_cluster() {
    local dir="${TMPDIR:-/tmp}/executor-redis-cluster" ports=() p node
    if [ -f "$dir/ports" ]; then
        read -r -a ports <"$dir/ports"
        if [ "${#ports[@]}" -eq 3 ] && redis_cluster_ok "${ports[@]}"; then
            echo "reusing the Redis Cluster on ports ${ports[*]}"
        else
            ports=()
        fi
    fi
    if [ "${#ports[@]}" -eq 0 ]; then
        command -v redis-server >/dev/null || apt_install redis-server redis-tools
        mkdir -p "$dir"
        for p in $(seq 17001 17999); do
            redis_port_free "$p" && ports+=("$p")
            [ "${#ports[@]}" -eq 3 ] && break
        done
        [ "${#ports[@]}" -eq 3 ] || { echo "error: no 3 free loopback ports for a Redis Cluster" >&2; return 1; }
        echo "starting a 3-primary Redis Cluster on ports ${ports[*]} in $dir"
        for p in "${ports[@]}"; do
            node="$dir/$p"
            rm -rf "$node" && mkdir -p "$node"
            redis-server --daemonize yes --bind 127.0.0.1 --port "$p" --dir "$node" \
                --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
                --save "" --appendonly no --logfile "$node/redis.log" --pidfile "$node/redis.pid"
        done
        for p in "${ports[@]}"; do
            wait_for "cluster node 127.0.0.1:$p" 20 redis-cli -h 127.0.0.1 -p "$p" ping
        done
        redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >/dev/null
        wait_for "Redis Cluster state ok" 30 redis_cluster_ok "${ports[@]}"
        echo "${ports[*]}" >"$dir/ports"
    fi
    export REDIS_CLUSTER_URL="redis-cluster://127.0.0.1:${ports[0]}?node=127.0.0.1:${ports[1]}&node=127.0.0.1:${ports[2]}"
}

if [ -z "${REDIS_CLUSTER_URL:-}" ]; then
    ensure_redis_cluster
fi
