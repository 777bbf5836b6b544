-- Inserts a schedule with its cursor at the server's now, or replaces only the
-- definition of the row already there, so a replaced schedule keeps its pause,
-- cursor, fence and last task.
-- ?1 namespace, ?2 name, ?3 the definition (JSON).
-- params: ns, name, definition
INSERT INTO reliable_executor_schedules (ns, name, definition, paused, cursor_ms, fence, last_task)
VALUES (?, ?, ?, 0, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), 0, NULL)
ON DUPLICATE KEY UPDATE definition =
VALUES(definition)
