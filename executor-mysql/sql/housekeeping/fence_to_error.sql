-- A RUNNING row whose fence is at its column's maximum cannot be reaped (the
-- bump overflows): it goes to ERROR with the reason instead.
-- ?1 namespace, ?2 task id (as stored), ?3 the id's length in bytes.
UPDATE reliable_executor_tasks
SET finished_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    last_error = 'corrupt record: fence is at its column''s maximum',
    worker = NULL,
    lease_until = NULL,
    state = 'ERROR'
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND state = 'RUNNING'
