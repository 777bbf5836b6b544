-- Reap, 1/3: RUNNING tasks whose lease expired that no one is changing right
-- now (SKIP LOCKED: a heartbeat or finish in flight is skipped, not waited
-- for), oldest lease first. Autocommit: the locks end with the statement.
-- ?1 namespace, ?2 the most rows.
SELECT id, fence
FROM reliable_executor_tasks
WHERE ns = ?
  AND state = 'RUNNING'
  AND lease_until < CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
ORDER BY lease_until
LIMIT ?
FOR UPDATE SKIP LOCKED
