-- Deletes the lapsed announcements of a namespace.
-- ?1 namespace.
-- params: ns
DELETE
FROM reliable_executor_workers
WHERE ns = ?
  AND until_ms <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
