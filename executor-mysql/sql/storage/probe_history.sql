-- Schema check: the throughput history.
SELECT ns, minute, name, succeeded, failed
FROM reliable_executor_history
LIMIT 0
