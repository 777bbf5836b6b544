-- The one UPDATE behind every finish but a retry: it changes the row only while
-- the task is RUNNING with the lease's fence, so a worker that lost its lease
-- cannot overwrite a newer attempt. Every duration bound was validated
-- (Finish::validate), so `now + delay` stays in range.
-- $1 the delay until it is due again in ms (NULL: due time kept), $2 whether
-- the target state is terminal (stamps finished_at), $3 the error (NULL:
-- last_error kept), $4 whether the attempt is given back (released or
-- postponed: attempts - 1), $5 the target state, $6 namespace, $7 task id,
-- $8 the lease's fence.
UPDATE reliable_executor_tasks
SET due_at = CASE WHEN $1::BIGINT IS NULL THEN due_at
        ELSE (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $1 END,
    finished_at = CASE WHEN $2
        THEN (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) END,
    last_error = COALESCE($3, last_error),
    attempts = CASE WHEN $4 THEN GREATEST(attempts, 1) - 1 ELSE attempts END,
    worker = NULL,
    lease_until = NULL,
    state = $5
WHERE ns = $6
  AND id = $7
  AND fence = $8
  AND state = 'RUNNING'
