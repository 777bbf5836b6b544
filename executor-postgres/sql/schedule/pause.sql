-- Sets the pause flag of one schedule and nothing else.
-- $1 paused, $2 namespace, $3 name.
-- params: paused, ns, name
UPDATE reliable_executor_schedules
SET paused = $1
WHERE ns = $2
  AND name = $3
