-- A waiting task due later becomes due now (the server's clock); one already
-- due keeps its due time, so its place.
-- $1 namespace, $2 task id.
-- params: ns, id
UPDATE reliable_executor_tasks
SET due_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
WHERE ns = $1
  AND id = $2
  AND state IN ('CREATED', 'PENDING')
  AND due_at > (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
