-- Deletes one schedule.
-- ?1 namespace, ?2 name, ?3 the name's length in bytes: the `_bin` collations pad
-- with spaces, so `name = 'a'` alone would also match a row named 'a '.
-- params: ns, name, name_len
DELETE
FROM reliable_executor_schedules
WHERE ns = ?
  AND name = ?
  AND LENGTH(name) = ?
