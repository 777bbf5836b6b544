-- Run once on every connection the storage takes from the pool, in one round
-- trip. READ COMMITTED: the claim's and the reap's locking reads take no gap
-- locks, so they never block a concurrent INSERT. A lock wait of 2 s instead
-- of the server's 50 s: no statement of this crate holds locks across a client
-- round trip, so a wait longer than a statement means a foreign holder (a
-- DBA's open transaction, a process of an older release); the statement fails
-- with a retryable 1205 instead of stalling heartbeats and finishes behind it.
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET SESSION innodb_lock_wait_timeout = 2
