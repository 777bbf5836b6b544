-- Heartbeat, 2/2: the fence, state and cancel request of each leased task: which
-- leases are lost and which tasks have a cancel request.
-- ?1 namespace, then the ids. `/*SLICE:ids*/?` stands for one placeholder per lease: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
SELECT id, fence, state, cancel_requested
FROM reliable_executor_tasks
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
