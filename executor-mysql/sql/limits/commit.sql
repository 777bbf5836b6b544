-- Commits the limited claim and puts the session's `wait_timeout` back.
COMMIT;
SET SESSION wait_timeout = @reliable_executor_wait
