-- Run once on every connection the storage takes from the pool. A lock wait of
-- 2 s at most: no statement of this crate holds locks across a client round
-- trip (but the limited claim, itself bounded by the idle timeout of its
-- transaction), so a longer wait means a foreign holder (a DBA's open
-- transaction); the statement fails with a retryable error instead of stalling
-- heartbeats and finishes behind it. READ COMMITTED is PostgreSQL's default and
-- is what the statements assume; it is set in case the server's default is
-- another.
SET lock_timeout = '2s';
SET default_transaction_isolation = 'read committed';
SET application_name = 'reliable-executor'
