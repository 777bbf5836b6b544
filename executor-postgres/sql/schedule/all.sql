-- Every schedule of a namespace, by name.
-- $1 namespace.
-- params: ns
SELECT name, definition, paused, cursor_ms, fence, last_task
FROM reliable_executor_schedules
WHERE ns = $1
ORDER BY name
