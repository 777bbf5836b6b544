-- The figures of the queues with waiting tasks: each queue's range of
-- `ix_waiting`, so only waiting tasks are read.
-- `wq`: the queues of the namespace with waiting tasks, a recursive CTE: a skip
-- scan of `ix_waiting`, one probe per queue however many tasks wait in each
-- (PostgreSQL has no loose index scan of its own).
-- $1, $2, $3 namespace.
WITH RECURSIVE wq AS ((SELECT queue
                       FROM reliable_executor_tasks
                       WHERE ns = $1
                         AND state IN ('CREATED', 'PENDING')
                       ORDER BY queue
                       LIMIT 1) UNION ALL SELECT (
                           SELECT t.queue
                           FROM reliable_executor_tasks t
                           WHERE t.ns = $2
                             AND t.state IN ('CREATED', 'PENDING')
                             AND t.queue > wq.queue
                           ORDER BY t.queue
                           LIMIT 1) FROM wq WHERE wq.queue IS NOT NULL)
SELECT q.queue, f.waiting, f.due, f.oldest_due
FROM (SELECT queue
      FROM wq
      WHERE queue IS NOT NULL) q
CROSS JOIN LATERAL (SELECT COUNT(*) AS waiting,
    COUNT(*) FILTER (WHERE t.due_at <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)) AS due,
    MIN(t.due_at) FILTER (WHERE t.due_at <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)) AS oldest_due
                    FROM reliable_executor_tasks t
                    WHERE t.ns = $3
                      AND t.queue = q.queue
                      AND t.state IN ('CREATED', 'PENDING')) f
