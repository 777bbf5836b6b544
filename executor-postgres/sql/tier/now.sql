-- The server's clock in epoch milliseconds: `statement_timestamp()`, the start
-- of the current statement. Not `now()`, which is the start of the transaction
-- (a statement inside a user's long transaction would stamp an old time), and
-- not `clock_timestamp()`, which is volatile: it changes during the statement,
-- so the planner cannot use `due_at <= it` as an index bound and every row would
-- see another "now". `statement_timestamp()` is stable within a statement, so
-- in the other statements it bounds index ranges like a constant.
-- params:
SELECT (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) AS now_ms
