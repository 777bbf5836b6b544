-- Completes a batch of leases in one UPDATE conditional on each fence (group
-- commit). The id list keeps the statement on the primary key; the pairs check
-- each item's fence.
-- ?1 namespace, then the ids, then the (id, fence) pairs. `/*SLICE:ids*/?` stands for one placeholder per lease: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
-- `/*SLICE:leases*/(?, ?)` stands for one (id, fence) pair per lease, not padded.
UPDATE reliable_executor_tasks
SET finished_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    worker = NULL,
    lease_until = NULL,
    state = 'COMPLETED'
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
  AND (id, fence) IN (/*SLICE:leases*/(?, ?))
  AND state = 'RUNNING'
