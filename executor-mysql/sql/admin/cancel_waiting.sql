-- Cancels a task that waits (CREATED or PENDING): CANCELLED, finished at the
-- server's now. No row changed: it is not waiting (any more).
-- ?1 namespace, ?2 task id, ?3 the id's length in bytes: the `_bin` collations pad with
-- spaces, so `id = 'pad'` alone would also match a row whose id was edited to 'pad ';
-- comparing the byte length too costs nothing once the primary key found the row.
-- params: ns, id, id_len
UPDATE reliable_executor_tasks
SET finished_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
    state = 'CANCELLED'
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND state IN ('CREATED', 'PENDING')
