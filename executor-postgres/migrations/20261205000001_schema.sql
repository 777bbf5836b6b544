-- Reliable Executor schema for PostgreSQL 13+.
--
-- One table set for every namespace: `ns` leads every key. Times are BIGINT
-- milliseconds since the Unix epoch on the server's clock, taken from
-- statement_timestamp() (see `sql.rs`, `now_ms!`). Text that is compared or
-- ordered (namespace, id, queue) uses the "C" collation: byte order, the
-- order the list cursors and the claim's tie-break rely on, whatever the
-- database's default collation.

CREATE TABLE IF NOT EXISTS reliable_executor_tasks (
    ns               TEXT COLLATE "C" NOT NULL,
    id               TEXT COLLATE "C" NOT NULL,
    name             TEXT COLLATE "C" NOT NULL,
    state            TEXT COLLATE "C" NOT NULL,
    payload          BYTEA    NOT NULL,
    attempts         INTEGER  NOT NULL DEFAULT 0,
    max_attempts     INTEGER  NOT NULL,
    fence            BIGINT   NOT NULL DEFAULT 0,
    created_at       BIGINT   NOT NULL,
    due_at           BIGINT   NOT NULL,
    started_at       BIGINT   NULL,
    finished_at      BIGINT   NULL,
    deadline         BIGINT   NULL,
    timeout_ms       BIGINT   NULL,
    retry            TEXT     NULL,
    last_error       TEXT     NULL,
    worker           TEXT COLLATE "C" NULL,
    lease_until      BIGINT   NULL,
    cancel_requested BOOLEAN  NOT NULL DEFAULT FALSE,
    debounce_key     TEXT COLLATE "C" NULL,
    queue            TEXT COLLATE "C" NOT NULL DEFAULT 'default',
    priority         SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (ns, id),
    -- Exactly one of the eight states, spelled exactly (a hand-edited
    -- 'created' would otherwise read as waiting yet match no partial index).
    CONSTRAINT ck_tasks_state
        CHECK (state IN ('CREATED', 'PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELLED', 'ERROR')),
    CONSTRAINT ck_tasks_priority CHECK (priority BETWEEN 0 AND 9),
    CONSTRAINT ck_tasks_counters CHECK (attempts >= 0 AND max_attempts >= 0 AND fence >= 0)
);

-- The claim: the waiting tasks of one queue in claim order (priority high
-- first, then due time, then id). Partial: a task enters it when it starts
-- waiting and leaves it when it is claimed, so finished tasks, however
-- many, are never in the claim's way, and the index stays the size of the
-- backlog.
CREATE INDEX IF NOT EXISTS ix_waiting ON reliable_executor_tasks (ns, queue, priority DESC, due_at, id)
    WHERE state IN ('CREATED', 'PENDING');

-- The debounce: at most one waiting task per key, and the key is free again
-- as soon as that task is claimed.
CREATE UNIQUE INDEX IF NOT EXISTS uk_waiting_key ON reliable_executor_tasks (ns, debounce_key)
    WHERE state IN ('CREATED', 'PENDING') AND debounce_key IS NOT NULL;

-- The reaper (expired leases in lease order) and the running tasks per
-- queue (limits, queue figures), from the index alone.
CREATE INDEX IF NOT EXISTS ix_running ON reliable_executor_tasks (ns, lease_until) INCLUDE (queue)
    WHERE state = 'RUNNING';

-- Trim (state IN (...) AND finished_at < cutoff), counts (GROUP BY state),
-- list (state = ? ORDER BY finished_at, id).
CREATE INDEX IF NOT EXISTS ix_finished ON reliable_executor_tasks (ns, state, finished_at, id);

-- One row per namespace that ever had a leader; the row stays when a term
-- ends so the fencing token only ever grows.
CREATE TABLE IF NOT EXISTS reliable_executor_leaders (
    ns        TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    worker    TEXT COLLATE "C" NOT NULL,
    token     BIGINT NOT NULL,
    until_ms  BIGINT NOT NULL
);

-- Workers announce the task names they run (handler names as a JSON array).
CREATE TABLE IF NOT EXISTS reliable_executor_workers (
    ns        TEXT COLLATE "C" NOT NULL,
    worker    TEXT COLLATE "C" NOT NULL,
    names     TEXT   NOT NULL,
    until_ms  BIGINT NOT NULL,
    PRIMARY KEY (ns, worker)
);

-- Cron schedules: the definition as the JSON of
-- `executor_core::schedule::Schedule` and the leader's progress through it.
CREATE TABLE IF NOT EXISTS reliable_executor_schedules (
    ns          TEXT COLLATE "C" NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    definition  TEXT    NOT NULL,
    paused      BOOLEAN NOT NULL DEFAULT FALSE,
    cursor_ms   BIGINT  NOT NULL,
    fence       BIGINT  NOT NULL DEFAULT 0,
    last_task   TEXT COLLATE "C" NULL,
    PRIMARY KEY (ns, name)
);

-- Queues that are paused or have fleet-wide limits: concurrency, and the
-- token bucket `rate_starts` per `rate_per_ms` with `rate_burst` tokens,
-- its state `tokens` as of `tokens_at`, and `throttled`, the claims a limit
-- cut short. NULL limit columns are no limit.
CREATE TABLE IF NOT EXISTS reliable_executor_queues (
    ns          TEXT COLLATE "C" NOT NULL,
    queue       TEXT COLLATE "C" NOT NULL,
    paused      BOOLEAN NOT NULL DEFAULT FALSE,
    concurrency INTEGER NULL,
    rate_starts INTEGER NULL,
    rate_per_ms BIGINT  NULL,
    rate_burst  INTEGER NULL,
    tokens      DOUBLE PRECISION NOT NULL DEFAULT 0,
    tokens_at   BIGINT NOT NULL DEFAULT 0,
    throttled   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (ns, queue)
);

-- Wake-ups across processes. A task that starts waiting (inserted, or moved
-- back to PENDING by a retry, a requeue or the reaper) sends its namespace
-- on the channel `reliable_executor`; every process LISTENs on it and wakes
-- its claimers of that namespace, which read the earliest due time again.
-- NOTIFY is transactional: a task inserted inside a transaction is
-- announced when that transaction commits, and never if it rolls back.
-- Notifications with the same payload in one transaction are sent once.
CREATE OR REPLACE FUNCTION reliable_executor_notify_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    n TEXT;
BEGIN
    FOR n IN SELECT DISTINCT ns FROM inserted WHERE state IN ('CREATED', 'PENDING') LOOP
        PERFORM pg_notify('reliable_executor', n);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION reliable_executor_notify_waiting() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('reliable_executor', NEW.ns);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS tr_tasks_inserted ON reliable_executor_tasks;
CREATE TRIGGER tr_tasks_inserted AFTER INSERT ON reliable_executor_tasks
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION reliable_executor_notify_inserted();

-- Row level with a WHEN: a claim or a finish that leaves the task out of
-- the waiting states never calls the function.
DROP TRIGGER IF EXISTS tr_tasks_waiting ON reliable_executor_tasks;
CREATE TRIGGER tr_tasks_waiting AFTER UPDATE OF state, due_at ON reliable_executor_tasks
    FOR EACH ROW
    WHEN (NEW.state IN ('CREATED', 'PENDING')
          AND (OLD.state IS DISTINCT FROM NEW.state OR NEW.due_at < OLD.due_at))
    EXECUTE FUNCTION reliable_executor_notify_waiting();
