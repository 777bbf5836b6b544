-- Tasks per state.
-- $1 namespace.
SELECT state, COUNT(*) AS n
FROM reliable_executor_tasks
WHERE ns = $1
GROUP BY state
