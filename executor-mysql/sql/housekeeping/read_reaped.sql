-- Reap, 3/3: the rows reap.sql changed, read back by their ids and its token.
-- ?1 namespace, then the ids, then ?2 the token. `/*SLICE:ids*/?` stands for one placeholder per id: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
SELECT id, state
FROM reliable_executor_tasks
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
  AND claim_token = ?
