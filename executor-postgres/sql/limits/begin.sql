-- Opens the limited claim's transaction. The one transaction of this crate
-- that waits for the client while it holds a lock: a stopped holder is bounded
-- by the transaction's idle timeout, 2 s, after which the server ends the
-- session and releases the queue's row. Sent as one text-protocol batch.
BEGIN;
SET LOCAL idle_in_transaction_session_timeout = '2s'
