#!/usr/bin/env bash
# Runs schemathesis against the admin API's /openapi.json, served by
# examples/service.rs (MemoryStorage, admin router under /admin) on a free
# loopback port, with a few seeded tasks so ids and names hit real data.
# Not part of scripts/test.sh: it needs Python and PyPI.
# See docs/reliability.md, "Admin API under schemathesis".
#
#   scripts/schemathesis.sh                      # 200 examples per operation, seed 1
#   MAX_EXAMPLES=500 SEED=7 scripts/schemathesis.sh
#
# Env: SCHEMATHESIS_VERSION (4.32.5), SCHEMATHESIS_VENV (/tmp/schemathesis-venv),
# MAX_EXAMPLES (200), SEED (1), TIME_LIMIT (900 s for the whole run),
# CARGO_TARGET_DIR (cargo's default if unset). Exit status is schemathesis'.
set -euo pipefail

cd "$(dirname "$0")/.."
version="${SCHEMATHESIS_VERSION:-4.32.5}"
venv="${SCHEMATHESIS_VENV:-/tmp/schemathesis-venv}"
max_examples="${MAX_EXAMPLES:-200}"
seed="${SEED:-1}"
time_limit="${TIME_LIMIT:-900}"

# 1. schemathesis, in its own venv.
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$version"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "schemathesis==$version"
fi

# 2. The example service on a free port.
cargo build --quiet -p examples --example service
target="${CARGO_TARGET_DIR:-target}"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
work=$(mktemp -d)
RUST_LOG=warn "$target/debug/examples/service" --port "$port" >"$work/service.log" 2>&1 &
service=$!
trap 'kill "$service" 2>/dev/null || true; wait "$service" 2>/dev/null || true; rm -rf "$work"' EXIT

wait_for() { # what, seconds, command...
    local what=$1 deadline=$((SECONDS + $2)); shift 2
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS > deadline)); then
            echo "timed out waiting for $what; service log:" >&2
            cat "$work/service.log" >&2
            exit 1
        fi
        sleep 0.2
    done
}
wait_for "the service on $base" 60 curl -sf "$base/admin/api/counts"

# Seed: completed orders, declined ones (retried, then FAILED), a
# notification due tomorrow, a payload the handler cannot decode (ERROR).
post() { curl -sf -X POST -H 'content-type: application/json' -d "$2" "$base$1" >/dev/null; }
for n in 1 2 3; do post /api/orders "{\"order_id\":$n,\"amount_cents\":500}"; done
for n in 4 5; do post /api/orders "{\"order_id\":$n,\"amount_cents\":500000}"; done
post /admin/api/tasks '{"name":"send_notification","payload":{"user":"bob","message":"x"},"id":"note-bob","delay_ms":86400000}'
post /admin/api/tasks '{"name":"process_order","payload":"not an order","id":"bad-payload"}'
dead_letter_is() { curl -sf "$base/admin/api/counts" | grep -q "\"dead_letter\":$1,"; }
wait_for "3 tasks in the dead letter" 30 dead_letter_is 3

cat >"$work/schemathesis.toml" <<'EOF'
# Half the generated ids and names are the seeded ones, so paths reach
# real records and submits reach real handlers.
[dictionaries.task_ids]
values = ["order_1_pay", "order_2_pay", "order_3_pay", "order_4_pay", "order_5_pay", "note-bob", "bad-payload"]

[dictionaries.task_names]
values = ["process_order", "send_notification"]

[parameters]
"path.id" = { dictionary = "task_ids", probability = 0.5 }
"body.name" = { dictionary = "task_names", probability = 0.5 }

# Validity a static schema cannot state: a task name is valid only if a
# handler has it (422 unknown_task), a cursor only if this store's list
# made it (422 invalid). Schema-valid requests may get those 422s here;
# every other check still applies to these operations.
[[operations]]
include-operation-id = ["submit", "list"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
EOF

# 3. The run. `GET /` (the dashboard overview) is left out: axum's `nest`
# serves it at `/admin`, and schemathesis always asks for `/admin/`;
# executor-admin/tests/it/documented_statuses.rs probes it instead.
cd "$work"
timeout "$time_limit" "$venv/bin/schemathesis" --config-file "$work/schemathesis.toml" run \
    "$base/admin/openapi.json" --url "$base/admin" \
    --checks all --phases examples,coverage,fuzzing,stateful \
    --max-examples "$max_examples" --seed "$seed" --workers 1 \
    --exclude-operation-id overview
