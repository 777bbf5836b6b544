-- Flags a RUNNING task for cancellation: its worker sees the flag at its next
-- heartbeat.
-- ?1 namespace, ?2 task id, ?3 the id's length in bytes: the `_bin` collations pad with
-- spaces, so `id = 'pad'` alone would also match a row whose id was edited to 'pad ';
-- comparing the byte length too costs nothing once the primary key found the row.
-- params: ns, id, id_len
UPDATE reliable_executor_tasks
SET cancel_requested = 1
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND state = 'RUNNING'
