-- Plain and idempotent submits: one INSERT of one row, or of up to 500 for a
-- batch. `/*SLICE:rows*/(..)` stands for one row per task, separated by commas:
-- ? namespace, ? id, ? name, ? payload, ? max attempts, ? the due time (epoch ms,
-- or NULL), ? the delay in ms (used when the due time is NULL), ? the max
-- duration in ms (or NULL), ? the timeout in ms, ? the retry policy (JSON),
-- ? queue, ? priority, ? the submit's nonce.
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at,
    deadline, timeout_ms, retry, debounce_key, queue, priority, submit_nonce)
VALUES /*SLICE:rows*/(?, ?, ?, 'CREATED', ?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    COALESCE(?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?),
    CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?, ?, ?, NULL, ?, ?, ?)
