-- Tasks per state, from the `ix_finished` index alone.
-- ?1 namespace.
-- params: ns
SELECT state, COUNT(*) AS n
FROM reliable_executor_tasks
WHERE ns = ?
GROUP BY state
