-- Purge, 4/6: the namespace's cron schedules.
-- $1 namespace.
-- params: ns
DELETE
FROM reliable_executor_schedules
WHERE ns = $1
