-- Purge, 6/6: the namespace's throughput history.
-- $1 namespace.
-- params: ns
DELETE
FROM reliable_executor_history
WHERE ns = $1
