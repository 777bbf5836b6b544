-- Sets the pause flag of one schedule and nothing else. The matched row counts
-- (sqlx connects with CLIENT_FOUND_ROWS), so pausing a paused one still does.
-- ?1 paused, ?2 namespace, ?3 name, ?4 the name's length in bytes.
-- params: paused, ns, name, name_len
UPDATE reliable_executor_schedules
SET paused = ?
WHERE ns = ?
  AND name = ?
  AND LENGTH(name) = ?
