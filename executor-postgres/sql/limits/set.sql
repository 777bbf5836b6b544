-- Sets a queue's limits in one upsert. The bucket: full for a queue that had no
-- rate, else its tokens refilled to now under the old rate and capped at the
-- new burst; `throttled` is kept. The SET reads the row as it was (`q.`): the
-- tokens are refilled under the old rate and time before they are replaced.
-- $1 namespace, $2 queue, $3 concurrency, $4 rate starts, $5 rate period in ms,
-- $6 burst, $7 a full bucket (the burst).
INSERT INTO reliable_executor_queues AS q (ns, queue, paused, concurrency, rate_starts, rate_per_ms,
    rate_burst, tokens, tokens_at, throttled)
VALUES ($1, $2, FALSE, $3, $4, $5, $6, $7,
    (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT), 0)
ON CONFLICT (ns, queue)
DO UPDATE SET tokens = CASE WHEN $4::INTEGER IS NULL THEN 0 WHEN q.rate_starts > 0
        AND q.rate_per_ms > 0 AND q.rate_burst > 0 THEN LEAST($7, q.rate_burst,
        LEAST(GREATEST(q.tokens, 0),
        q.rate_burst) + GREATEST((FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) - q.tokens_at,
        0)::DOUBLE PRECISION * q.rate_starts / q.rate_per_ms) ELSE $7 END,
    tokens_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    concurrency = $3,
    rate_starts = $4,
    rate_per_ms = $5,
    rate_burst = $6
