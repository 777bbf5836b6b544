-- Tasks per state.
-- $1 namespace.
-- params: ns
SELECT state, COUNT(*) AS n
FROM reliable_executor_tasks
WHERE ns = $1
GROUP BY state
