-- One task with its attempt log.
-- ?1 namespace, ?2 task id, ?3 the id's length in bytes: the `_bin` collations pad with
-- spaces, so `id = 'pad'` alone would also match a row whose id was edited to 'pad ';
-- comparing the byte length too costs nothing once the primary key found the row.
-- params: ns, id, id_len
SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at,
    finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested,
    debounce_key, queue, priority, attempt_log
FROM reliable_executor_tasks
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
