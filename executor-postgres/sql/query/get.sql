-- One task with its attempt log (as text).
-- $1 namespace, $2 task id.
-- params: ns, id
SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at,
    finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested,
    debounce_key, queue, priority, attempt_log::text AS attempt_log
FROM reliable_executor_tasks
WHERE ns = $1
  AND id = $2
