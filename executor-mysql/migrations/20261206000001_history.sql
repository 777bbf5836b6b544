-- Issue 18: throughput history. One row per (namespace, minute, task name):
-- attempts that succeeded and failed in that minute of the server's clock.
-- Executors add to it with one upsert per flush (`succeeded = succeeded +
-- VALUES(succeeded)`), so adds from many processes sum; the leader deletes
-- minutes older than its keep period.

CREATE TABLE IF NOT EXISTS reliable_executor_history (
    ns          VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    -- The minute's start, epoch milliseconds on the server's clock.
    minute      BIGINT       NOT NULL,
    -- The task name as given (at most 191 bytes). Binary, so names that
    -- differ only in case or trailing spaces stay distinct rows.
    name        VARBINARY(191) NOT NULL,
    -- Signed like the other counters, so a hand-edited negative value is
    -- read (and left out with a warning) rather than refused.
    succeeded   BIGINT       NOT NULL DEFAULT 0,
    failed      BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (ns, minute, name)
) ENGINE = InnoDB;
