-- Adds throughput counts: one upsert for every task name, in the order of the
-- primary key (so concurrent adders lock rows in one order), into the minute of
-- the server's clock; adds from many processes sum.
-- `/*SLICE:rows*/(..)` stands for one row per name, separated by commas: ?
-- namespace, ? name, ? succeeded, ? failed.
INSERT INTO reliable_executor_history (ns, minute, name, succeeded, failed)
VALUES /*SLICE:rows*/(?, (CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) DIV 60000) * 60000, ?, ?, ?)
ON DUPLICATE KEY UPDATE succeeded = succeeded +
VALUES(succeeded), failed = failed +
VALUES(failed)
