-- Heartbeat: renews every lease still held, in one UPDATE: only rows still
-- RUNNING with the lease's fence, so a lost lease is never revived; returns
-- the renewed ones and their cancel requests.
-- $1 namespace, $2 the lease in ms, $3 the ids, $4 their fences (the same
-- order: the fence of `id` is at its position in $3).
UPDATE reliable_executor_tasks
SET lease_until = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $2
WHERE ns = $1
  AND id = ANY($3::TEXT[])
  AND state = 'RUNNING'
  AND fence = ($4::BIGINT[])[array_position($3::TEXT[], id)]
RETURNING id, cancel_requested
