-- A page of the tasks in one state, in (finished_at, id) order, after a cursor.
-- The line marked `-- if name` is sent when the list is of one task name. After
-- a cursor: `-- if after_unfinished` for one at a NULL finished_at,
-- `-- if after_finished` for one at a time (NULLs sort last, as the index keeps
-- them: after a NULL come the larger ids among NULLs; after a time, the larger
-- times, then every NULL). `id > $n` compares bytes ("C" collation), as the
-- index orders it. The placeholders are numbered as if every line were sent;
-- the SQL core numbers those it sends 1, 2, 3, .. in order.
-- $1 namespace, $2 state, $3 name (if name), $4 id (if after_unfinished), or
-- $5 finished_at, $6 finished_at, $7 id (if after_finished), $8 the most rows
-- (the page's size + 1).
-- params: ns, state, name, cursor_id, cursor_finished, cursor_finished, cursor_id, limit
SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at,
    finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested,
    debounce_key, queue, priority
FROM reliable_executor_tasks
WHERE ns = $1
  AND state = $2
  AND name = $3 -- if name
  AND finished_at IS NULL AND id > $4 -- if after_unfinished
  AND (finished_at > $5 OR (finished_at = $6 AND id > $7) OR finished_at IS NULL) -- if after_finished
ORDER BY finished_at, id
LIMIT $8
