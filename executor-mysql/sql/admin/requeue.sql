-- Moves a dead-lettered task (FAILED, TIMEOUT, ERROR) back to PENDING, due now,
-- attempts reset, with the attempt that dead-lettered it appended to its attempt
-- log ('dead'). The log comes first in the SET: MySQL assigns left to right, so
-- it reads `attempts`, `started_at` and `finished_at` before they change. The
-- log is trimmed to the newest 20 entries (executor_core::attempt_log::MAX_ATTEMPT_LOG), its
-- error to 8192 characters (executor_core::attempt_log::MAX_ERROR_LEN); a column that is not
-- a JSON array (NULL, or edited by hand) starts afresh rather than failing the
-- statement.
-- ?1 namespace, ?2 task id, ?3 the id's length in bytes: the `_bin` collations pad with
-- spaces, so `id = 'pad'` alone would also match a row whose id was edited to 'pad ';
-- comparing the byte length too costs nothing once the primary key found the row.
-- params: ns, id, id_len
UPDATE reliable_executor_tasks
SET attempt_log = JSON_ARRAY_APPEND(CASE WHEN JSON_VALID(attempt_log) THEN CASE
        WHEN JSON_TYPE(attempt_log) = 'ARRAY' THEN CASE WHEN JSON_LENGTH(attempt_log) >= 20
        THEN JSON_REMOVE(attempt_log, '$[0]') ELSE attempt_log END ELSE '[]' END ELSE '[]' END, '$',
        JSON_OBJECT('attempt', attempts, 'worker', NULL, 'started_at', started_at, 'ended_at',
        COALESCE(finished_at, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)), 'outcome', 'dead',
        'error', LEFT(last_error, 8192))),
    due_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    attempts = 0,
    finished_at = NULL,
    worker = NULL,
    lease_until = NULL,
    cancel_requested = 0,
    state = 'PENDING'
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND state IN ('FAILED', 'TIMEOUT', 'ERROR')
