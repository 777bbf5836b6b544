-- The debounce as one upsert on the `uk_waiting_key` partial index: the task
-- waiting under the key, if any, gets its due time moved to
-- min(now + window, created_at + max wait) and the new payload; otherwise a task
-- is inserted with the given id. `xmax = 0` tells an inserted row from an
-- updated one. A duplicate of the primary key means the id is taken by a task
-- not waiting under this key. The task this very submit created (its nonce: a
-- resend after a lost answer) is left as it is, and no row comes back.
-- $1 namespace, $2 task id, $3 name, $4 payload, $5 max attempts, $6 the window
-- in ms, $7 the max wait in ms (or NULL), $8 the max duration in ms (or NULL),
-- $9 the timeout in ms, $10 the retry policy (JSON), $11 the debounce key,
-- $12 queue, $13 priority, $14 the submit's nonce.
INSERT INTO reliable_executor_tasks AS t (ns, id, name, state, payload, max_attempts, created_at,
    due_at, deadline, timeout_ms, retry, debounce_key, queue, priority, submit_nonce)
VALUES ($1, $2, $3, 'CREATED', $4, $5,
    (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + LEAST($6, COALESCE($7, $6)),
    (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $8, $9, $10, $11, $12, $13,
    $14)
ON CONFLICT (ns, debounce_key)
WHERE state IN ('CREATED', 'PENDING')
  AND debounce_key IS NOT NULL
DO UPDATE SET due_at = LEAST((FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $6,
        COALESCE(t.created_at + $7,
        (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $6)),
    payload = EXCLUDED.payload
WHERE t.submit_nonce IS DISTINCT FROM $14
RETURNING t.id, (t.xmax = 0) AS inserted
