-- The next queue name after one (see first_queue.sql).
-- ?1 namespace, ?2 the last name.
SELECT MIN(queue) AS queue
FROM reliable_executor_tasks
WHERE ns = ?
  AND queue > ?
