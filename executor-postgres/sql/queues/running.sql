-- RUNNING tasks per queue (`ix_running`).
-- $1 namespace.
-- params: ns
SELECT queue, COUNT(*) AS running
FROM reliable_executor_tasks
WHERE ns = $1
  AND state = 'RUNNING'
GROUP BY queue
