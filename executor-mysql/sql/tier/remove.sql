-- Deletes a task moved to another tier if it still waits with this fence, so a
-- task claimed meanwhile is never removed under its worker.
-- ?1 namespace, ?2 task id, ?3 the id's length in bytes: the `_bin` collations pad with
-- spaces, so `id = 'pad'` alone would also match a row whose id was edited to 'pad ';
-- comparing the byte length too costs nothing once the primary key found the row.
-- ?4 the fence.
-- params: ns, id, id_len, fence
DELETE
FROM reliable_executor_tasks
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND fence = ?
  AND state IN ('CREATED', 'PENDING')
