-- Issue 14: workers announce the task names they run, so the leader can warn
-- when processes with different handler sets share a namespace. One row per
-- (namespace, worker); `until_ms` on the server's clock; lapsed rows are
-- deleted by the next read.

CREATE TABLE IF NOT EXISTS reliable_executor_workers (
    ns        VARCHAR(64)  CHARACTER SET ascii   COLLATE ascii_bin   NOT NULL,
    worker    VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    -- The handler names as a JSON array of strings.
    names     MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    until_ms  BIGINT       NOT NULL,
    PRIMARY KEY (ns, worker)
) ENGINE = InnoDB;
