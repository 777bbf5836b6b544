-- Resuming a queue, 1/2: deletes its row if it holds no limits (a queue with
-- limits is claimed only through the limited transaction).
-- ?1 namespace, ?2 queue.
-- params: ns, queue
DELETE p
FROM reliable_executor_queues p
WHERE p.ns = ?
  AND p.queue = ?
  AND NOT (p.concurrency IS NOT NULL OR p.rate_starts IS NOT NULL OR p.rate_per_ms IS NOT NULL
      OR p.rate_burst IS NOT NULL)
