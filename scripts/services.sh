#!/usr/bin/env bash
# Makes sure the services the tests need answer on loopback: starts them if
# they are installed, installs them with apt-get when missing.
# Source it, then call ensure_redis / ensure_mariadb / ensure_postgres.

apt_install() {
    if [ -z "${APT_UPDATED:-}" ]; then
        apt-get update -qq
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # wait_for <what> <seconds> <command...>
    local what=$1 secs=$2
    shift 2
    for _ in $(seq 1 "$((secs * 10))"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "error: $what did not come up within ${secs}s" >&2
    return 1
}

ensure_redis() {
    if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then return 0; fi
    command -v redis-server >/dev/null || apt_install redis-server redis-tools
    echo "starting redis-server on 127.0.0.1:6379"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log
    wait_for "redis on 127.0.0.1:6379" 20 redis-cli -h 127.0.0.1 -p 6379 ping
}

ensure_mariadb() {
    if mysqladmin -h 127.0.0.1 -P 3306 -uroot status >/dev/null 2>&1; then
        mysql -h 127.0.0.1 -P 3306 -uroot -e 'CREATE DATABASE IF NOT EXISTS test'
        return 0
    fi
    command -v mariadbd >/dev/null || apt_install mariadb-server mariadb-client
    echo "starting mariadbd on 127.0.0.1:3306"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
    if [ ! -d /var/lib/mysql/mysql ]; then
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    fi
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
    wait_for "mariadb on 127.0.0.1:3306" 60 mysqladmin -h 127.0.0.1 -P 3306 -uroot status
    # Root over TCP with an empty password, as the tests expect.
    mysql -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket" 2>/dev/null || true
    mysql -h 127.0.0.1 -P 3306 -uroot -e 'CREATE DATABASE IF NOT EXISTS test'
}

# PostgreSQL on 127.0.0.1:5432, user postgres with trust on loopback,
# database `test`.
postgres_test_db() {
    psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" \
        | grep -q 1 || psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -qc 'CREATE DATABASE test'
}

ensure_postgres() {
    if command -v pg_isready >/dev/null && pg_isready -h 127.0.0.1 -p 5432 -q; then
        postgres_test_db
        return 0
    fi
    command -v pg_ctlcluster >/dev/null || apt_install postgresql postgresql-client
    local ver hba
    ver=$(ls /etc/postgresql | sort -V | tail -1)
    hba=/etc/postgresql/$ver/main/pg_hba.conf
    if ! grep -q "reliable-executor" "$hba"; then
        # First match wins: trust on loopback ahead of the packaged rules.
        sed -i '1i # reliable-executor tests: trust on loopback\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    fi
    echo "starting PostgreSQL $ver on 127.0.0.1:5432"
    pg_ctlcluster "$ver" main start 2>/dev/null || pg_ctlcluster "$ver" main reload || service postgresql start
    wait_for "postgres on 127.0.0.1:5432" 60 pg_isready -h 127.0.0.1 -p 5432 -q
    postgres_test_db
}
