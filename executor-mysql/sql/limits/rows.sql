-- Every row of a namespace in the queues table: pauses, limits, buckets.
-- ?1 namespace.
SELECT queue, paused, concurrency, rate_starts, rate_per_ms, rate_burst, tokens, tokens_at,
    throttled
FROM reliable_executor_queues
WHERE ns = ?
