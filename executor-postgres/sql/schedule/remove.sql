-- Deletes one schedule.
-- $1 namespace, $2 name.
-- params: ns, name
DELETE
FROM reliable_executor_schedules
WHERE ns = $1
  AND name = $2
