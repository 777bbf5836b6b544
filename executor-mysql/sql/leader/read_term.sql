-- The namespace's leadership row, expired or not: who holds the term after
-- acquire.sql.
-- ?1 namespace.
-- params: ns
SELECT worker, token, until_ms
FROM reliable_executor_leaders
WHERE ns = ?
