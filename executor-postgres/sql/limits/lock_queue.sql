-- Limited claim, 1/5: the queue's row, locked until the commit, and the
-- server's now. NOWAIT: a row another claimer holds fails at once and the claim
-- skips the queue rather than wait.
-- $1 namespace, $2 queue.
SELECT paused, concurrency, rate_starts, rate_per_ms, rate_burst, tokens, tokens_at, throttled,
    (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) AS now
FROM reliable_executor_queues
WHERE ns = $1
  AND queue = $2
FOR UPDATE NOWAIT
