-- Removing a queue's limits, 2/2: clears them on the row a paused queue keeps,
-- and resets `throttled`.
-- $1 namespace, $2 queue.
-- params: ns, queue
UPDATE reliable_executor_queues
SET concurrency = NULL,
    rate_starts = NULL,
    rate_per_ms = NULL,
    rate_burst = NULL,
    tokens = 0,
    throttled = 0
WHERE ns = $1
  AND queue = $2
