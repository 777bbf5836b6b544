-- Removing a queue's limits, 1/2: deletes its row unless the queue is paused.
-- $1 namespace, $2 queue.
-- params: ns, queue
DELETE
FROM reliable_executor_queues
WHERE ns = $1
  AND queue = $2
  AND NOT paused
