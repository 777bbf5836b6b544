-- Purge, 2/6: the namespace's leadership row.
-- $1 namespace.
-- params: ns
DELETE
FROM reliable_executor_leaders
WHERE ns = $1
