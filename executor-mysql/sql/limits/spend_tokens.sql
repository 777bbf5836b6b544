-- Limited claim, 5/5: the bucket and `throttled` written back (then the
-- commit). `throttled` stops one short of its column's maximum.
-- ?1 tokens left, ?2 as of (epoch ms), ?3 1 if a limit cut the claim short,
-- ?4 namespace, ?5 queue.
UPDATE reliable_executor_queues
SET tokens = ?,
    tokens_at = ?,
    throttled = LEAST(throttled, 18446744073709551614) + ?
WHERE ns = ?
  AND queue = ?
