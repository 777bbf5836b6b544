-- The server's clock in epoch milliseconds. `NOW(3)` is fixed for the length of
-- a statement, so in the other statements the optimizer treats this expression
-- as a constant and range-scans on it.
-- params:
SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS now_ms
