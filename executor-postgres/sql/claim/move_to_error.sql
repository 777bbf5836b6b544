-- Moves a row that cannot run to ERROR with the reason. The fence is not
-- bumped: it may be the very value that overflows.
-- $1 the reason, $2 namespace, $3 task id (as stored), $4 NULL for a row that
-- still waits, else the fence it is RUNNING under.
-- params: reason, ns, id, token
UPDATE reliable_executor_tasks
SET finished_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    last_error = $1,
    worker = NULL,
    lease_until = NULL,
    state = 'ERROR'
WHERE ns = $2
  AND id = $3
  AND CASE WHEN $4::BIGINT IS NULL THEN state IN ('CREATED', 'PENDING') ELSE state = 'RUNNING'
  AND fence = $4 END
