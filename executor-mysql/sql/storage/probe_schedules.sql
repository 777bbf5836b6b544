-- Schema check: the cron schedules.
SELECT ns, name, definition, paused, cursor_ms, fence, last_task
FROM reliable_executor_schedules
LIMIT 0
