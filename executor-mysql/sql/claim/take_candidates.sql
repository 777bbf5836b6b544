-- Claim, 2/3: the candidates to RUNNING under a fresh token, each checked again
-- under its row lock (still due on the server's clock, attempts and fence below
-- their columns' maximum), so two claimers never take the same task and nothing
-- is taken before it is due. The plain claim takes the first n still waiting
-- (the lines marked `-- if ordered`); the limited claim takes every candidate.
-- ?1 the lease in ms, ?2 worker, ?3 the token, ?4 namespace, then the candidates'
-- ids, then ?5 the attempts column's maximum, ?6 the fence column's maximum,
-- ?7 the most rows (if ordered). `/*SLICE:ids*/?` stands for one placeholder per candidate: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
UPDATE reliable_executor_tasks
SET fence = fence + 1,
    attempts = attempts + 1,
    cancel_requested = 0,
    started_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    lease_until = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?,
    worker = ?,
    claim_token = ?,
    state = 'RUNNING'
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
  AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
  AND attempts < ?
  AND fence < ?
ORDER BY queue_rank, ready_at, id -- if ordered
LIMIT ? -- if ordered
