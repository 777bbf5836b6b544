-- Resuming a queue, 2/2: clears the flag of a row that holds limits.
-- ?1 namespace, ?2 queue.
-- params: ns, queue
UPDATE reliable_executor_queues
SET paused = 0
WHERE ns = ?
  AND queue = ?
