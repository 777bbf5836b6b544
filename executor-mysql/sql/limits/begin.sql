-- Opens the limited claim's transaction with a bound on idleness: the
-- session's `wait_timeout` is 2 s while it is open, so a stopped holder
-- releases the queue's row within that (the server closes a connection idle
-- that long, rolling the transaction back); the session's own value is kept
-- to put back (commit.sql, rollback.sql). Sent as one text-protocol batch.
SET @reliable_executor_wait = @@SESSION.wait_timeout, SESSION wait_timeout = 2; START TRANSACTION
