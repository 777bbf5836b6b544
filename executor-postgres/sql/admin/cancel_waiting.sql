-- Cancels a task that waits (CREATED or PENDING): CANCELLED, finished at the
-- server's now. No row changed: it is not waiting (any more).
-- $1 namespace, $2 task id.
-- params: ns, id
UPDATE reliable_executor_tasks
SET finished_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    state = 'CANCELLED'
WHERE ns = $1
  AND id = $2
  AND state IN ('CREATED', 'PENDING')
