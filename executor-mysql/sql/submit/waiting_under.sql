-- Debounce, 1/3: the task waiting under a debounce key, if any (the
-- `uk_waiting_key` index binds a key to at most one waiting task), and the
-- nonce of its submit.
-- ?1 namespace, ?2 the key.
SELECT id, submit_nonce
FROM reliable_executor_tasks
WHERE ns = ?
  AND waiting_key = ?
