-- Purge, 3/6: the namespace's workers' announcements.
-- ?1 namespace.
DELETE
FROM reliable_executor_workers
WHERE ns = ?
