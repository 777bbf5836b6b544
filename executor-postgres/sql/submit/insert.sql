-- The INSERT of plain and idempotent tasks: every row's values as arrays, so a
-- batch of any size is one statement of one shape (one prepared statement). A
-- taken id inserts nothing and is not returned (ON CONFLICT DO NOTHING): the
-- caller tells a duplicate from the ids that come back. Only the primary key can
-- conflict (the rows carry no debounce key). Each row keeps its submit's nonce.
-- $1 namespace, then one array per column, in row order: $2 ids, $3 names,
-- $4 payloads, $5 max attempts, $6 due times (epoch ms, or NULL), $7 delays in
-- ms (used where the due time is NULL), $8 max durations in ms (or NULL),
-- $9 timeouts in ms, $10 retry policies (JSON), $11 queues, $12 priorities,
-- $13 the submits' nonces.
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at,
    deadline, timeout_ms, retry, queue, priority, submit_nonce)
SELECT $1, u.id, u.name, 'CREATED', u.payload, u.max_attempts,
    (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    COALESCE(u.due_abs,
        (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + u.due_offset),
    (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + u.max_duration,
    u.timeout_ms, u.retry, u.queue, u.priority, u.nonce
FROM UNNEST($2::TEXT[], $3::TEXT[], $4::BYTEA[], $5::INTEGER[], $6::BIGINT[], $7::BIGINT[],
    $8::BIGINT[], $9::BIGINT[], $10::TEXT[], $11::TEXT[], $12::SMALLINT[], $13::BIGINT[]) AS u(id,
    name, payload, max_attempts, due_abs, due_offset, max_duration, timeout_ms, retry, queue,
    priority, nonce)
ON CONFLICT (ns, id)
DO NOTHING
RETURNING id
