#!/usr/bin/env bash
# The one command that runs every check CI runs: starts (and if needed
# installs) Redis, MariaDB and PostgreSQL, then fmt, clippy -D warnings, rustdoc -D warnings,
# every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/services.sh
source scripts/services.sh

ensure_redis
ensure_mariadb
ensure_postgres
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export MYSQL_URL="${MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
export POSTGRES_URL="${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"

for extra in scripts/test.d/*.sh; do
    [ -e "$extra" ] || continue
    # shellcheck source=/dev/null
    source "$extra"
done

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo doc (warnings are errors: broken links, missing docs)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
echo "== cargo test"
cargo test --workspace --locked
