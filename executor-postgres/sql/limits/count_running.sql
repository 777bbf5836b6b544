-- Limited claim, 2/5: the queue's RUNNING tasks (`ix_running`). A statement of
-- its own, started after the row lock is granted, so under READ COMMITTED it
-- sees every claim committed before.
-- $1 namespace, $2 queue.
SELECT COUNT(*) AS running
FROM reliable_executor_tasks
WHERE ns = $1
  AND state = 'RUNNING'
  AND queue = $2
