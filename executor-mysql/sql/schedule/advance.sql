-- Moves a schedule's cursor if it is still where the leader read it and no
-- newer leader moved it: the row lock serialises concurrent moves, and each
-- re-reads the committed cursor, so of several moves from one cursor exactly
-- one matches. A move without a task keeps the stored last task.
-- ?1 the new cursor (epoch ms), ?2 the leader's token, ?3 the task fired (or
-- NULL), ?4 namespace, ?5 name, ?6 the name's length in bytes, ?7 the cursor
-- as read, ?8 the leader's token.
-- params: to_ms, token, task, ns, name, name_len, from_ms, token
UPDATE reliable_executor_schedules
SET cursor_ms = ?,
    fence = ?,
    last_task = COALESCE(?, last_task)
WHERE ns = ?
  AND name = ?
  AND LENGTH(name) = ?
  AND cursor_ms = ?
  AND fence <= ?
