-- Limited claim, 1/5: the queue's row, locked until the commit, and the
-- server's now. NOWAIT: a row another claimer holds fails at once (MariaDB
-- 1205, MySQL 8 3572) and the claim skips the queue rather than wait.
-- ?1 namespace, ?2 queue.
SELECT paused, concurrency, rate_starts, rate_per_ms, rate_burst, tokens, tokens_at, throttled,
    CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS now
FROM reliable_executor_queues
WHERE ns = ?
  AND queue = ?
FOR UPDATE NOWAIT
