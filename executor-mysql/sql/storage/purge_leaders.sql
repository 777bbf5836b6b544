-- Purge, 2/6: the namespace's leadership row.
-- ?1 namespace.
DELETE
FROM reliable_executor_leaders
WHERE ns = ?
