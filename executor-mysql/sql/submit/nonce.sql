-- The nonce of the submit that stored a task: after an INSERT found the id
-- taken, the same nonce means the same submit sent again (its lost first try
-- stored it).
-- ?1 namespace, ?2 task id, ?3 the id's length in bytes: the `_bin` collations pad with
-- spaces, so `id = 'pad'` alone would also match a row whose id was edited to 'pad ';
-- comparing the byte length too costs nothing once the primary key found the row.
SELECT submit_nonce
FROM reliable_executor_tasks
WHERE ns = ?
  AND id = ?
  AND LENGTH(id) = ?
