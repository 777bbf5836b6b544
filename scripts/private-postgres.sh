#!/usr/bin/env bash
# A private PostgreSQL server for measurements that need their own server
# settings (autovacuum on, other shared_buffers), never the shared one:
#
#   scripts/private-postgres.sh start DIR PORT [-c name=value ...]
#   scripts/private-postgres.sh stop DIR
#
# `start` runs initdb in DIR (trust auth, C locale), starts the server on
# 127.0.0.1:PORT with fsync on and the given settings, creates database
# `test` and prints its URL. As root, the server runs as the `postgres` OS
# user (PostgreSQL refuses to run as root). `stop` stops it (fast shutdown)
# and removes DIR.
set -euo pipefail

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || bin=$(dirname "$(command -v initdb || echo /nonexistent/initdb)")
[ -x "$bin/initdb" ] || { echo "PostgreSQL server binaries not found: apt-get install postgresql" >&2; exit 1; }

as_server() {
    if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,12p' "$0" >&2; exit 2; }
case "$cmd" in
start)
    port=${3:?port}
    shift 3
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    as_server "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C >"$dir/initdb.log"
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o \
        "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c fsync=on $*" start >/dev/null
    "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Xqc "CREATE DATABASE test"
    echo "postgres://postgres@127.0.0.1:$port/test"
    ;;
stop)
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    rm -rf "$dir"
    ;;
*)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
