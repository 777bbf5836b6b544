-- Completes a batch of leases in one UPDATE conditional on each fence (group
-- commit).
-- $1 namespace, $2 the ids, $3 their fences (the same order).
UPDATE reliable_executor_tasks
SET finished_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    worker = NULL,
    lease_until = NULL,
    state = 'COMPLETED'
WHERE ns = $1
  AND id = ANY($2::TEXT[])
  AND state = 'RUNNING'
  AND fence = ($3::BIGINT[])[array_position($2::TEXT[], id)]
