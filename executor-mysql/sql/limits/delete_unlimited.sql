-- Removing a queue's limits, 1/2: deletes its row unless the queue is paused.
-- ?1 namespace, ?2 queue.
-- params: ns, queue
DELETE
FROM reliable_executor_queues
WHERE ns = ?
  AND queue = ?
  AND paused = 0
