-- Moves a row that cannot run to ERROR with the reason. The fence is not bumped:
-- it may be the very value that overflows. A priority above 9 (written with the
-- checks off) is brought into range, since `ck_tasks_priority` refuses any
-- UPDATE of the row otherwise.
-- ?1 the reason, ?2 namespace, ?3 task id (as stored), ?4 the id's length in
-- bytes, ?5 and ?6 the claim's token: NULL for a row that still waits, else the
-- token of the claim that took it (the row is RUNNING under that token).
-- params: reason, ns, id, id_len, token, token
UPDATE reliable_executor_tasks
SET finished_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    last_error = ?,
    worker = NULL,
    lease_until = NULL,
    priority = LEAST(priority, 9),
    state = 'ERROR'
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND IF(? IS NULL, state IN ('CREATED', 'PENDING'), state = 'RUNNING' AND claim_token = ?)
