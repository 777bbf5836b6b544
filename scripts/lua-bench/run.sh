#!/usr/bin/env bash
# Times the Redis submit, claim and finish scripts of one or more Lua directories
# inside the server, alternating them, on a private redis-server (a free
# loopback port, a temp dir, stopped at the end). A diagnostic for script
# changes, not the benchmark: what users get is measured by
# `examples/bench` (docs/benchmarks.md).
#
#   scripts/lua-bench/run.sh [-r ROUNDS] [-n TASKS] [-b BATCH] [-l LAG] DIR...
#
# e.g. the scripts of HEAD against the working tree's:
#   git worktree add /tmp/head HEAD
#   scripts/lua-bench/run.sh /tmp/head/executor-redis/lua executor-redis/lua
set -euo pipefail
rounds=8 tasks=10000 batch=32 lag=3
while getopts r:n:b:l: o; do
    case $o in
        r) rounds=$OPTARG ;; n) tasks=$OPTARG ;; b) batch=$OPTARG ;; l) lag=$OPTARG ;;
        *) sed -n 2,13p "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,13p "$0"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
i=0
for d in "$@"; do
    python3 "$here/drive.py" "$d" "$i" | redis-cli -p "$port" -x function load replace >/dev/null
    i=$((i + 1))
done
for _ in $(seq 1 "$rounds"); do
    i=0
    for d in "$@"; do
        echo "$i $(redis-cli -p "$port" fcall "drive$i" 0 "$tasks" "$batch" "$lag" | tr '\n' ' ')"
        i=$((i + 1))
    done
done | python3 -c '
import statistics, sys
names = sys.argv[1:]
runs = {}
for line in sys.stdin:
    parts = line.split()
    if len(parts) != 4:
        sys.exit("a drive failed: " + line.strip())
    runs.setdefault(int(parts[0]), []).append(tuple(float(p) for p in parts[1:]))
print("server time per task, us (submit.lua of 500 / claim.lua / finish.lua bodies): min and median of %d runs" % len(runs[0]))
for i, name in enumerate(names):
    s, c, f = ([r[k] for r in runs[i]] for k in range(3))
    print("%-40s submit %5.2f %5.2f   claim %6.2f %6.2f   finish %5.2f %5.2f" % (
        name, min(s), statistics.median(s), min(c), statistics.median(c), min(f), statistics.median(f)))
' "$@"
