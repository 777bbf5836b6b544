-- The namespace's unexpired term, if any.
-- ?1 namespace.
-- params: ns
SELECT worker, token, until_ms
FROM reliable_executor_leaders
WHERE ns = ?
  AND until_ms > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
