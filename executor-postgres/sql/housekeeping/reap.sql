-- The reap, in one statement: up to $2 expired leases no one is changing right
-- now (FOR UPDATE SKIP LOCKED: a heartbeat or finish in flight is skipped, not
-- waited for), each moved on as its row says, decided in SQL on the row as it
-- is under the statement's lock (SET expressions read the row before the
-- update): TIMEOUT past the deadline, FAILED with no attempts left, else PENDING
-- due now, the lost attempt appended to its attempt log; its fence bumped, so
-- the presumed-dead worker's late finish is refused. A row whose fence is at
-- its column's maximum cannot be bumped: it goes to ERROR with the reason. The
-- rows are updated by `ctid`, as the claim's are (see claim/claim_queue.sql).
-- $1 namespace, $2 the most rows.
WITH c AS (SELECT ctid
           FROM reliable_executor_tasks
           WHERE ns = $1
             AND state = 'RUNNING'
             AND lease_until < (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
           ORDER BY lease_until
           LIMIT $2
           FOR UPDATE SKIP LOCKED)
UPDATE reliable_executor_tasks t
SET attempt_log = CASE WHEN (NOT (t.deadline IS NOT NULL
        AND (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) >= t.deadline)
        AND NOT (t.attempts >= t.max_attempts) AND NOT (t.fence >= 9223372036854775807)) THEN (CASE
        WHEN jsonb_typeof(t.attempt_log) = 'array' THEN CASE
        WHEN jsonb_array_length(t.attempt_log) >= 20 THEN t.attempt_log - 0 ELSE t.attempt_log END
        ELSE '[]'::jsonb END) || jsonb_build_array(jsonb_build_object('attempt', t.attempts,
        'worker', t.worker, 'started_at', t.started_at, 'ended_at',
        (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT), 'outcome',
        'lease_expired', 'error', 'lease expired (worker presumed dead)')) ELSE t.attempt_log END,
    due_at = CASE WHEN (NOT (t.deadline IS NOT NULL
        AND (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) >= t.deadline)
        AND NOT (t.attempts >= t.max_attempts) AND NOT (t.fence >= 9223372036854775807))
        THEN (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) ELSE t.due_at END,
    finished_at = CASE WHEN (NOT (t.deadline IS NOT NULL
        AND (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) >= t.deadline)
        AND NOT (t.attempts >= t.max_attempts) AND NOT (t.fence >= 9223372036854775807))
        THEN t.finished_at
        ELSE (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) END,
    state = CASE WHEN (t.fence >= 9223372036854775807) THEN 'ERROR' WHEN (t.deadline IS NOT NULL
        AND (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) >= t.deadline)
        THEN 'TIMEOUT' WHEN (t.attempts >= t.max_attempts) THEN 'FAILED' ELSE 'PENDING' END,
    fence = CASE WHEN (t.fence >= 9223372036854775807) THEN t.fence ELSE t.fence + 1 END,
    last_error = CASE WHEN (t.fence >= 9223372036854775807)
        THEN 'corrupt record: fence is at its column''s maximum'
        ELSE 'lease expired (worker presumed dead)' END,
    worker = NULL,
    lease_until = NULL,
    cancel_requested = FALSE
WHERE t.ctid = ANY(ARRAY(SELECT ctid
                         FROM c))
RETURNING t.id, t.state
