-- Moves a dead-lettered task (FAILED, TIMEOUT, ERROR) back to PENDING, due now,
-- attempts reset, with the attempt that dead-lettered it appended to its attempt
-- log ('dead'); SET expressions read the row as it was before the update. The
-- log is trimmed to the newest 20 entries (executor_core::attempt_log::MAX_ATTEMPT_LOG), its
-- error to 8192 characters (executor_core::attempt_log::MAX_ERROR_LEN); a value that is not
-- an array (NULL, or edited by hand) starts afresh.
-- $1 namespace, $2 task id.
-- params: ns, id
UPDATE reliable_executor_tasks t
SET attempt_log = (CASE WHEN jsonb_typeof(t.attempt_log) = 'array' THEN CASE
        WHEN jsonb_array_length(t.attempt_log) >= 20 THEN t.attempt_log - 0 ELSE t.attempt_log END
        ELSE '[]'::jsonb END) || jsonb_build_array(jsonb_build_object('attempt', t.attempts,
        'worker', NULL, 'started_at', t.started_at, 'ended_at', COALESCE(t.finished_at,
        (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)), 'outcome', 'dead',
        'error', left(t.last_error, 8192))),
    due_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
    attempts = 0,
    finished_at = NULL,
    worker = NULL,
    lease_until = NULL,
    cancel_requested = FALSE,
    state = 'PENDING'
WHERE ns = $1
  AND id = $2
  AND state IN ('FAILED', 'TIMEOUT', 'ERROR')
