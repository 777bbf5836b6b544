-- Heartbeat, 1/2: renews every lease still held, in one UPDATE: only rows still
-- RUNNING with the lease's fence, so a lost lease is never revived. The id list
-- keeps the statement on the primary key; the pairs check each fence.
-- ?1 the lease in ms, ?2 namespace, then the ids, then the (id, fence) pairs.
-- `/*SLICE:ids*/?` stands for one placeholder per lease: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
-- `/*SLICE:leases*/(?, ?)` likewise stands for one (id, fence) pair per lease,
-- padded the same way.
UPDATE reliable_executor_tasks
SET lease_until = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
  AND state = 'RUNNING'
  AND (id, fence) IN (/*SLICE:leases*/(?, ?))
