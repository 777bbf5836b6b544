-- Deletes one task in any state, by primary key.
-- $1 namespace, $2 task id.
-- params: ns, id
DELETE
FROM reliable_executor_tasks
WHERE ns = $1
  AND id = $2
