-- The state of one task.
-- $1 namespace, $2 task id.
-- params: ns, id
SELECT state
FROM reliable_executor_tasks
WHERE ns = $1
  AND id = $2
