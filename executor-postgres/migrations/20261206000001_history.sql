-- Issue 18: throughput history. One row per (namespace, minute, task name):
-- attempts that succeeded and failed in that minute of the server's clock
-- (statement_timestamp()). Executors add with one upsert per flush
-- (`succeeded = t.succeeded + EXCLUDED.succeeded`), so adds from many
-- processes sum; the leader deletes minutes older than its keep period.

CREATE TABLE IF NOT EXISTS reliable_executor_history (
    ns          TEXT COLLATE "C" NOT NULL,
    -- The minute's start, epoch milliseconds.
    minute      BIGINT NOT NULL,
    -- The task name as given; "C" so names compare and sort as bytes.
    name        TEXT COLLATE "C" NOT NULL,
    succeeded   BIGINT NOT NULL DEFAULT 0,
    failed      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (ns, minute, name)
);
