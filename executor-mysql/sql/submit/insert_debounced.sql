-- Debounce, 3/3: no task waits under the key, so the task is inserted with it,
-- due after the window or the max wait, whichever is sooner. A duplicate on
-- the key: one started waiting meanwhile; on the id: the id is taken.
-- ?1 namespace, ?2 task id, ?3 name, ?4 payload, ?5 max attempts, ?6 the window
-- in ms, ?7 the max wait in ms (or NULL), ?8 the window in ms, ?9 the max
-- duration in ms (or NULL), ?10 the timeout in ms, ?11 the retry policy (JSON),
-- ?12 the debounce key, ?13 queue, ?14 priority, ?15 the submit's nonce.
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at,
    deadline, timeout_ms, retry, debounce_key, queue, priority, submit_nonce)
VALUES (?, ?, ?, 'CREATED', ?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + LEAST(?, COALESCE(?, ?)),
    CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?, ?, ?, ?, ?, ?, ?)
