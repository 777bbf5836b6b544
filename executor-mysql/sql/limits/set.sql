-- Sets a queue's limits in one upsert. The bucket: full for a queue that had no
-- rate, else its tokens refilled to now under the old rate and capped at the
-- new burst; `throttled` is kept. Assignments run left to right on the updated
-- values: `tokens` reads the old rate and time before they are replaced.
-- ?1 namespace, ?2 queue, ?3 concurrency, ?4 rate starts, ?5 rate period in ms,
-- ?6 burst, ?7 a full bucket (the burst), ?8 rate starts, ?9 and ?10 a full
-- bucket, ?11 concurrency, ?12 rate starts, ?13 rate period in ms, ?14 burst.
INSERT INTO reliable_executor_queues (ns, queue, paused, concurrency, rate_starts, rate_per_ms,
    rate_burst, tokens, tokens_at, throttled)
VALUES (?, ?, 0, ?, ?, ?, ?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), 0)
ON DUPLICATE KEY UPDATE tokens = IF(? IS NULL, 0, IF(rate_starts > 0 AND rate_per_ms > 0
        AND rate_burst > 0, LEAST(?, rate_burst, LEAST(GREATEST(tokens, 0),
        rate_burst) + GREATEST(CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - tokens_at,
        0) * rate_starts / rate_per_ms), ?)),
    tokens_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    concurrency = ?,
    rate_starts = ?,
    rate_per_ms = ?,
    rate_burst = ?
