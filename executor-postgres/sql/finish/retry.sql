-- finish.sql for a retry: PENDING, due after the delay, and the attempt that
-- ended appended to the attempt log in the same statement. Only retries pay for
-- the log; completions run finish.sql or the batch UPDATE.
-- $1 worker, $2 the error, $3 the delay in ms, $4 namespace, $5 task id, $6 the
-- lease's fence.
UPDATE reliable_executor_tasks t
SET attempt_log = (CASE WHEN jsonb_typeof(t.attempt_log) = 'array' THEN CASE
        WHEN jsonb_array_length(t.attempt_log) >= 20 THEN t.attempt_log - 0 ELSE t.attempt_log END
        ELSE '[]'::jsonb END) || jsonb_build_array(jsonb_build_object('attempt', t.attempts,
        'worker', $1::TEXT, 'started_at', t.started_at, 'ended_at',
        (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT), 'outcome', 'failed',
        'error', left($2, 8192))),
    due_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $3,
    finished_at = NULL,
    last_error = $2,
    worker = NULL,
    lease_until = NULL,
    state = 'PENDING'
WHERE ns = $4
  AND id = $5
  AND fence = $6
  AND state = 'RUNNING'
