-- How long until the earliest waiting task of the served queues is due
-- (`wait_ms`, NULL when none waits): per queue, ten probes of `ix_waiting`,
-- one per priority, over the queues not paused, not at their concurrency
-- limit and whose limits are valid. A queue at its concurrency limit does not
-- count: a finish frees the slot, and the finishing process claims again
-- itself. A queue whose bucket holds less than one token counts from when its
-- next token is earned (plus a millisecond, so the wake finds it earned), as the
-- memory store's `next_claimable`.
-- $1 the queues, $2, $3, $4 namespace.
SELECT (MIN(CASE WHEN p.rate_starts IS NULL THEN d.due ELSE GREATEST(d.due,
    p.tokens_at + CEIL((1 - LEAST(GREATEST(p.tokens, 0),
    1)) * p.rate_per_ms / p.rate_starts)::BIGINT + 1) END) - (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT))::BIGINT AS wait_ms
FROM (SELECT DISTINCT queue
      FROM UNNEST($1::TEXT[]) AS u(queue)) q
CROSS JOIN generate_series(0, 9) AS pr(priority)
CROSS JOIN LATERAL (SELECT t.due_at AS due
                    FROM reliable_executor_tasks t
                    WHERE t.ns = $2
                      AND t.queue = q.queue
                      AND t.priority = pr.priority
                      AND t.state IN ('CREATED', 'PENDING')
                    ORDER BY t.due_at
                    LIMIT 1) d
LEFT JOIN reliable_executor_queues p ON p.ns = $3
  AND p.queue = q.queue
WHERE p.queue IS NULL OR (NOT p.paused AND (p.concurrency IS NULL
    OR (p.concurrency BETWEEN 1 AND 1000000 AND p.concurrency > (
    SELECT COUNT(*)
    FROM reliable_executor_tasks r
    WHERE r.ns = $4
      AND r.state = 'RUNNING'
      AND r.queue = q.queue))) AND (p.rate_starts IS NULL OR (p.rate_starts BETWEEN 1 AND 1000000
          AND p.rate_burst BETWEEN 1 AND 1000000 AND p.rate_per_ms BETWEEN 1 AND 86400000))
          AND (p.rate_starts IS NOT NULL OR (p.rate_per_ms IS NULL AND p.rate_burst IS NULL)))
