-- finish.sql for a retry: PENDING, due after the delay, and the attempt that
-- ended appended to the attempt log in the same statement (first in the SET,
-- before the columns it reads change: MySQL assigns left to right). Only
-- retries pay for the log; completions run finish.sql or the batch UPDATE.
-- ?1 worker, ?2 the error for the log (cut to 8192 characters), ?3 the delay
-- in ms, ?4 the error, ?5 namespace, ?6 task id, ?7 the id's length in bytes,
-- ?8 the lease's fence.
UPDATE reliable_executor_tasks
SET attempt_log = JSON_ARRAY_APPEND(CASE WHEN JSON_VALID(attempt_log) THEN CASE
        WHEN JSON_TYPE(attempt_log) = 'ARRAY' THEN CASE WHEN JSON_LENGTH(attempt_log) >= 20
        THEN JSON_REMOVE(attempt_log, '$[0]') ELSE attempt_log END ELSE '[]' END ELSE '[]' END, '$',
        JSON_OBJECT('attempt', attempts, 'worker', ?, 'started_at', started_at, 'ended_at',
        CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), 'outcome', 'failed', 'error', LEFT(?,
        8192))),
    due_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?,
    finished_at = NULL,
    last_error = ?,
    worker = NULL,
    lease_until = NULL,
    state = 'PENDING'
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND fence = ?
  AND state = 'RUNNING'
