-- Limited claim, 3/5: up to $3 due tasks of the queue claimed as
-- claim/claim_queue.sql claims them, without its checks of the queues row (the
-- row is locked by this transaction and was read).
-- $1 namespace, $2 queue, $3 the most rows, $4 the lease in ms, $5 worker.
WITH c AS (SELECT ctid
           FROM reliable_executor_tasks
           WHERE ns = $1
             AND queue = $2
             AND state IN ('CREATED', 'PENDING')
             AND due_at <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
           ORDER BY priority DESC, due_at, id
           LIMIT $3
           FOR UPDATE SKIP LOCKED)
UPDATE reliable_executor_tasks t
SET state = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807) THEN 'ERROR'
        ELSE 'RUNNING' END,
    fence = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807) THEN t.fence
        ELSE t.fence + 1 END,
    attempts = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807)
        THEN t.attempts ELSE t.attempts + 1 END,
    cancel_requested = FALSE,
    started_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    finished_at = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807)
        THEN (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) END,
    last_error = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807)
        THEN 'corrupt record: attempts ' || t.attempts || ' or fence ' || t.fence || ' is at its column''s maximum'
        ELSE t.last_error END,
    lease_until = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807) THEN NULL
        ELSE (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $4 END,
    worker = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807) THEN NULL
        ELSE $5 END
WHERE t.ctid = ANY(ARRAY(SELECT ctid
                         FROM c))
RETURNING t.*
