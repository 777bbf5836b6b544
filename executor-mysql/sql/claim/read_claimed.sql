-- Claim, 3/3: the rows take_candidates.sql took, read back by their ids and the
-- token (a claimer stopped between its UPDATE and this read for longer than the
-- lease finds its tasks reaped and does not run them). By primary key, always:
-- with a large backlog churning, the optimizer chose `ix_lease` for
-- `state = 'RUNNING'` and walked its entries of tasks that left RUNNING and
-- await purge (24,774 rows examined per read-back, 48 ms, with 1,000,000 tasks
-- waiting).
-- ?1 namespace, then the candidates' ids, then ?2 the token. `/*SLICE:ids*/?` stands for one placeholder per candidate: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at,
    finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested,
    debounce_key, queue, priority
FROM reliable_executor_tasks FORCE INDEX (PRIMARY)
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
  AND state = 'RUNNING'
  AND claim_token = ?
