-- Purge, 5/6: the namespace's paused and limited queues.
-- ?1 namespace.
-- params: ns
DELETE
FROM reliable_executor_queues
WHERE ns = ?
