-- Rolls the limited claim back and puts the session's `wait_timeout` back.
ROLLBACK;
SET SESSION wait_timeout = @reliable_executor_wait
