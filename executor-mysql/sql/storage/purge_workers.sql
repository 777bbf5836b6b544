-- Purge, 3/6: the namespace's workers' announcements.
-- ?1 namespace.
-- params: ns
DELETE
FROM reliable_executor_workers
WHERE ns = ?
