-- The claim of one queue, in one statement:
--
-- 1. `c`: up to $3 due tasks of the queue in claim order (priority high first,
--    due time, id) from the `ix_waiting` index, FOR UPDATE SKIP LOCKED: rows
--    another claimer is taking right now are skipped, not waited for, and a row
--    that changed since the statement's snapshot is checked again under its
--    lock (so a task claimed meanwhile is left out); none from a paused queue or
--    one with limits (the pause is read by the claim itself, so it holds from
--    the next claim statement on);
-- 2. `u`: those rows to RUNNING with the fence and attempts bumped, the lease on
--    the server's clock, returned. Found by their `ctid` (a TID scan) and nothing
--    else: `c` locked them in this statement, so they cannot move, and a
--    condition on `ns` would let the planner pick an index by the namespace's
--    estimate. A namespace the statistics do not know yet (new since the last
--    ANALYZE) is estimated at one row, and the join by id then walked the whole
--    namespace for every claim (1.27 s per claim of 64 with 40,000 rows; 3.1 ms
--    by `ctid`). A row whose counters are at their column's maximum (attempts
--    2147483647, fence 9223372036854775807) would fail the claim "out of range",
--    every time: it goes to ERROR with the reason instead;
-- 3. the result: the claimed rows, each with `lim`, whether the queue has limits
--    (then it is claimed through limits/claim_queue.sql); one row of NULLs and
--    `lim` when nothing was claimed.
--
-- $1 namespace, $2 queue, $3 the most rows, $4 the lease in ms, $5 worker.
WITH c AS (SELECT ctid
           FROM reliable_executor_tasks
           WHERE ns = $1
             AND queue = $2
             AND state IN ('CREATED', 'PENDING')
             AND due_at <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
             AND NOT EXISTS (SELECT 1
                             FROM reliable_executor_queues p
                             WHERE p.ns = $1
                               AND p.queue = $2
                               AND (p.paused OR (p.concurrency IS NOT NULL
                                   OR p.rate_starts IS NOT NULL OR p.rate_per_ms IS NOT NULL
                                   OR p.rate_burst IS NOT NULL)))
           ORDER BY priority DESC, due_at, id
           LIMIT $3
           FOR UPDATE SKIP LOCKED), u AS (
               UPDATE reliable_executor_tasks t
               SET state = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807)
                       THEN 'ERROR' ELSE 'RUNNING' END,
                   fence = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807)
                       THEN t.fence ELSE t.fence + 1 END,
                   attempts = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807)
                       THEN t.attempts ELSE t.attempts + 1 END,
                   cancel_requested = FALSE,
                   started_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
                   finished_at = CASE WHEN (t.attempts >= 2147483647
                       OR t.fence >= 9223372036854775807)
                       THEN (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) END,
                   last_error = CASE WHEN (t.attempts >= 2147483647
                       OR t.fence >= 9223372036854775807)
                       THEN 'corrupt record: attempts ' || t.attempts || ' or fence ' || t.fence || ' is at its column''s maximum'
                       ELSE t.last_error END,
                   lease_until = CASE WHEN (t.attempts >= 2147483647
                       OR t.fence >= 9223372036854775807) THEN NULL
                       ELSE (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $4 END,
                   worker = CASE WHEN (t.attempts >= 2147483647 OR t.fence >= 9223372036854775807)
                       THEN NULL ELSE $5 END
               WHERE t.ctid = ANY(ARRAY(SELECT ctid
                                        FROM c))
               RETURNING t.id, t.name, t.state, t.payload, t.attempts, t.max_attempts,
                   t.fence, t.created_at, t.due_at, t.started_at, t.finished_at, t.deadline,
                   t.timeout_ms, t.retry, t.last_error, t.worker, t.lease_until, t.cancel_requested,
                   t.debounce_key, t.queue, t.priority)
SELECT x.lim, u.*
FROM (SELECT EXISTS (SELECT 1
                     FROM reliable_executor_queues p
                     WHERE p.ns = $1
                       AND p.queue = $2
                       AND NOT p.paused
                       AND (p.concurrency IS NOT NULL OR p.rate_starts IS NOT NULL
                           OR p.rate_per_ms IS NOT NULL OR p.rate_burst IS NOT NULL)) AS lim) x
LEFT JOIN u ON TRUE
