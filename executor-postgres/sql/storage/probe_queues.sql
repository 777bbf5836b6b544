-- Schema check: the queues table.
SELECT ns, queue, paused, concurrency, rate_starts, rate_per_ms, rate_burst, tokens, tokens_at,
    throttled
FROM reliable_executor_queues
LIMIT 0
