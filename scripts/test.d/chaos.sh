# Sourced by scripts/test.sh before the cargo commands: the chaos and fault
# tests of executor-chaos (cargo test runs them; nothing runs here) start
# their own redis-server and mariadbd on free loopback ports, and the clock
# test preloads libfaketime. Install what is missing.
if ! command -v redis-server >/dev/null 2>&1; then
    apt_install redis-server redis-tools
fi
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
    apt_install mariadb-server mariadb-client
fi
if [ ! -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] && [ -z "${FAKETIME_LIB:-}" ]; then
    echo "installing faketime (libfaketime) for executor-chaos's clock test"
    apt_install faketime
fi
