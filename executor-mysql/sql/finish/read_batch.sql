-- After complete_batch.sql changed fewer rows than leases: the fence and state
-- of each, read by primary key, tell which completions landed.
-- ?1 namespace, then the ids. `/*SLICE:ids*/?` stands for one placeholder per lease: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
SELECT id, fence, state
FROM reliable_executor_tasks
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
