-- The one UPDATE behind every finish but a retry: it changes the row only while
-- the task is RUNNING with the lease's fence, so a worker that lost its lease
-- cannot overwrite a newer attempt. Every duration bound was validated
-- (Finish::validate), so `now + delay` stays in range.
-- ?1 and ?2 the delay until it is due again in ms (NULL: due time kept),
-- ?3 whether the target state is terminal (stamps finished_at), ?4 the error
-- (NULL: last_error kept), ?5 whether the attempt is given back (released or
-- postponed: attempts - 1), ?6 the target state, ?7 namespace, ?8 task id,
-- ?9 the id's length in bytes, ?10 the lease's fence.
UPDATE reliable_executor_tasks
SET due_at = IF(? IS NULL, due_at, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?),
    finished_at = IF(?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), NULL),
    last_error = COALESCE(?, last_error),
    attempts = IF(?, GREATEST(attempts, 1) - 1, attempts),
    worker = NULL,
    lease_until = NULL,
    state = ?
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND fence = ?
  AND state = 'RUNNING'
