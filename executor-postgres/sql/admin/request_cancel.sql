-- Flags a RUNNING task for cancellation: its worker sees the flag at its next
-- heartbeat.
-- $1 namespace, $2 task id.
-- params: ns, id
UPDATE reliable_executor_tasks
SET cancel_requested = TRUE
WHERE ns = $1
  AND id = $2
  AND state = 'RUNNING'
