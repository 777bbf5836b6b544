-- How long until the earliest waiting task of a namespace is due (`wait_ms`,
-- NULL when none waits): per queue with waiting tasks, ten probes of
-- `ix_waiting`, one per priority.
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
SELECT MIN(d.due) - (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) AS wait_ms
FROM (SELECT queue
      FROM wq
      WHERE queue IS NOT NULL) q
CROSS JOIN generate_series(0, 9) AS pr(priority)
CROSS JOIN LATERAL (SELECT t.due_at AS due
                    FROM reliable_executor_tasks t
                    WHERE t.ns = $3
                      AND t.queue = q.queue
                      AND t.priority = pr.priority
                      AND t.state IN ('CREATED', 'PENDING')
                    ORDER BY t.due_at
                    LIMIT 1) d
