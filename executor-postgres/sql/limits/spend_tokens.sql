-- Limited claim, 5/5: the bucket and `throttled` written back (then the
-- commit). `throttled` stops one short of its column's maximum.
-- $1 tokens left, $2 as of (epoch ms), $3 1 if a limit cut the claim short,
-- $4 namespace, $5 queue.
UPDATE reliable_executor_queues
SET tokens = $1,
    tokens_at = $2,
    throttled = LEAST(throttled, 9223372036854775806) + $3
WHERE ns = $4
  AND queue = $5
