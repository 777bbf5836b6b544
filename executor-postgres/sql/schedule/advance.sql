-- Moves a schedule's cursor if it is still where the leader read it and no
-- newer leader moved it: the row lock serialises concurrent moves, and each
-- re-reads the committed cursor, so of several moves from one cursor exactly one
-- matches. A move without a task keeps the stored last task.
-- $1 the new cursor (epoch ms), $2 the leader's token, $3 the task fired (or
-- NULL), $4 namespace, $5 name, $6 the cursor as read.
-- params: to_ms, token, task, ns, name, from_ms
UPDATE reliable_executor_schedules
SET cursor_ms = $1,
    fence = $2,
    last_task = COALESCE($3, last_task)
WHERE ns = $4
  AND name = $5
  AND cursor_ms = $6
  AND fence <= $2
