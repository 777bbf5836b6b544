-- Schema check: the leadership table.
SELECT ns, worker, token, until_ms
FROM reliable_executor_leaders
LIMIT 0
