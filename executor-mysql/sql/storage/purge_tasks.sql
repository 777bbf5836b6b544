-- Purge, 1/6: up to 10,000 tasks of a namespace, so no statement holds locks
-- for long (run until none is left).
-- ?1 namespace.
-- params: ns
DELETE
FROM reliable_executor_tasks
WHERE ns = ?
LIMIT 10000
