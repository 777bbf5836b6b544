-- Trim, 2/2: deletes the tasks select_trimmable.sql found, by primary key. It
-- repeats the states and the cutoff, so a task requeued in between is not
-- deleted.
-- `/*LITERALS:states*/(..)` marks the list of the class's states, which the
-- driver writes in as literals: ('COMPLETED', 'CANCELLED') or ('FAILED',
-- 'TIMEOUT', 'ERROR').
-- ?1 namespace, ?2 the cutoff (the later of the age's and the count's), then
-- the ids. `/*SLICE:ids*/?` stands for one placeholder per id: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
DELETE
FROM reliable_executor_tasks
WHERE ns = ?
  AND state IN /*LITERALS:states*/('COMPLETED', 'CANCELLED')
  AND finished_at <= ?
  AND id IN (/*SLICE:ids*/?)
