-- Whether a task exists.
-- $1 namespace, $2 task id.
-- params: ns, id
SELECT 1 AS one
FROM reliable_executor_tasks
WHERE ns = $1
  AND id = $2
