-- RUNNING tasks per queue: the namespace's RUNNING range of `ix_lease`, which
-- holds the queue, so no row is read.
-- ?1 namespace.
-- params: ns
SELECT queue, COUNT(*) AS running
FROM reliable_executor_tasks
WHERE ns = ?
  AND state = 'RUNNING'
GROUP BY queue
