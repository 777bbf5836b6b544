-- Waiting tasks due before a time, earliest first, with their attempt logs: for
-- each queue with waiting tasks and each priority, its range of `ix_waiting` up
-- to the time (so only the tasks due before it are read), merged by due time.
-- `wq`: the queues of the namespace with waiting tasks, a recursive CTE: a skip
-- scan of `ix_waiting`, one probe per queue however many tasks wait in each
-- (PostgreSQL has no loose index scan of its own).
-- $1, $2, $3 namespace, $4 the time (epoch ms), $5 and $6 the most rows.
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
SELECT d.*
FROM (SELECT queue
      FROM wq
      WHERE queue IS NOT NULL) q
CROSS JOIN generate_series(0, 9) AS pr(priority)
CROSS JOIN LATERAL (SELECT id, name, state, payload, attempts, max_attempts, fence, created_at,
    due_at, started_at, finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until,
    cancel_requested, debounce_key, queue, priority, attempt_log::text AS attempt_log
                    FROM reliable_executor_tasks t
                    WHERE t.ns = $3
                      AND t.queue = q.queue
                      AND t.priority = pr.priority
                      AND t.state IN ('CREATED', 'PENDING')
                      AND t.due_at < $4
                    ORDER BY t.due_at
                    LIMIT $5) d
ORDER BY d.due_at
LIMIT $6
