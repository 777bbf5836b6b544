-- Stores a task moved in from another tier exactly as given.
-- ?1 namespace, ?2 id, ?3 name, ?4 state, ?5 payload, ?6 attempts, ?7 max attempts,
-- ?8 fence, ?9 created at, ?10 due at, ?11 started at, ?12 finished at,
-- ?13 deadline, ?14 timeout in ms, ?15 retry policy, ?16 last error, ?17 worker,
-- ?18 lease until, ?19 cancel requested, ?20 debounce key (or NULL), ?21 queue,
-- ?22 priority, ?23 attempt log (JSON, or NULL).
-- params: ns, id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at, finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested, debounce_key, queue, priority, attempt_log
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence,
    created_at, due_at, started_at, finished_at, deadline, timeout_ms, retry, last_error, worker,
    lease_until, cancel_requested, debounce_key, queue, priority, attempt_log)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
