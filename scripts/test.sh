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
echo "== cargo package (every publishable crate packages: metadata, files, dependency versions)"
# Offline when the registry index already knows every dependency; on a
# fresh machine the index lacks `sqlx-core` (patched from vendor/, so no
# build ever fetched it), and cargo asks crates.io for it.
package_args=(--workspace --exclude examples --exclude executor-chaos --exclude linked-handlers
    --no-verify --locked --allow-dirty --quiet)
cargo package "${package_args[@]}" --offline 2>/dev/null || cargo package "${package_args[@]}"
echo "== cargo test"
cargo test --workspace --locked --no-run
# The chaos harness's tests take about 4.5 of the suite's 10 minutes, one
# at a time among themselves (private servers on free ports, no shared
# database): they run beside the rest, and their output follows it.
chaos_log=$(mktemp)
trap 'rm -f "$chaos_log"' EXIT
cargo test --locked -p executor-chaos >"$chaos_log" 2>&1 &
chaos=$!
status=0
cargo test --workspace --locked --no-fail-fast --exclude executor-chaos || status=$?
chaos_status=0
wait "$chaos" || chaos_status=$?
echo "== cargo test -p executor-chaos (ran beside the rest; exit $chaos_status)"
cat "$chaos_log"
[ "$status" = 0 ] && [ "$chaos_status" = 0 ] || { echo "cargo test failed: rest exit $status, executor-chaos exit $chaos_status"; exit 1; }
