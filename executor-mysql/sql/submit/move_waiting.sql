-- Debounce, 2/3: moves the due time of the task waiting under the key to
-- min(now + window, created_at + max wait) and replaces its payload, if it still
-- waits under the key: one row changed means that task carries this payload.
-- ?1 the window in ms, ?2 the max wait in ms (or NULL), ?3 the window in ms,
-- ?4 payload, ?5 namespace, ?6 task id, ?7 the id's length in bytes, ?8 the key.
UPDATE reliable_executor_tasks
SET due_at = LEAST(CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?, COALESCE(created_at + ?,
        CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?)),
    payload = ?
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND waiting_key = ?
