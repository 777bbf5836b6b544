-- Deletes a task moved to another tier if it still waits with this fence, so a
-- task claimed meanwhile is never removed under its worker.
-- $1 namespace, $2 task id, $3 the fence.
-- params: ns, id, fence
DELETE
FROM reliable_executor_tasks
WHERE ns = $1
  AND id = $2
  AND fence = $3
  AND state IN ('CREATED', 'PENDING')
