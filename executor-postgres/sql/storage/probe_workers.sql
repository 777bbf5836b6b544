-- Schema check: the workers' announcements.
SELECT ns, worker, names, until_ms
FROM reliable_executor_workers
LIMIT 0
