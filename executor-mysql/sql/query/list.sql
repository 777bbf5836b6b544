-- A page of the tasks in one state, in (finished_at, id) order, after a cursor.
-- The line marked `-- if name` is sent when the list is of one task name. After
-- a cursor: `-- if after_unfinished` for one at a NULL finished_at (NULLs sort
-- first: after a NULL come the larger ids among NULLs, then every non-NULL),
-- `-- if after_finished` for one at a time. `id > ?` is compared under the
-- column's collation, as the index orders it.
-- ?1 namespace, ?2 state, ?3 name (if name), ?4 id (if after_unfinished), or
-- ?4 finished_at, ?5 finished_at, ?6 id (if after_finished), then the most
-- rows (the page's size + 1).
-- params: ns, state, name, cursor_id, cursor_finished, cursor_finished, cursor_id, limit
SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at,
    finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested,
    debounce_key, queue, priority
FROM reliable_executor_tasks
WHERE ns = ?
  AND state = ?
  AND name = ? -- if name
  AND ((finished_at IS NULL AND id > ?) OR finished_at IS NOT NULL) -- if after_unfinished
  AND (finished_at > ? OR (finished_at = ? AND id > ?)) -- if after_finished
ORDER BY finished_at, id LIMIT ?
