-- A waiting task due later becomes due now (the server's clock); one already
-- due keeps its due time, so its place.
-- ?1 namespace, ?2 task id, ?3 the id's length in bytes: the `_bin` collations pad with
-- spaces, so `id = 'pad'` alone would also match a row whose id was edited to 'pad ';
-- comparing the byte length too costs nothing once the primary key found the row.
-- params: ns, id, id_len
UPDATE reliable_executor_tasks
SET due_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
  AND state IN ('CREATED', 'PENDING')
  AND due_at > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
