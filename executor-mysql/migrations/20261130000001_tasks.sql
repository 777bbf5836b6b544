-- Reliable Executor schema for MySQL 8 / MariaDB 10.6+.
-- One table set for every namespace: `ns` leads every key, so namespaces
-- never touch each other's index ranges. Times are BIGINT milliseconds since
-- the Unix epoch, stamped by the server (UNIX_TIMESTAMP(NOW(3)) * 1000).

CREATE TABLE IF NOT EXISTS reliable_executor_tasks (
    ns               VARCHAR(64)  CHARACTER SET ascii   COLLATE ascii_bin   NOT NULL,
    -- TaskId allows 191 bytes; 191 utf8mb4 characters always hold them.
    id               VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    name             VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    -- Plain text rather than ENUM so a hand-edited value reads back as a
    -- corrupt record instead of silently becoming ''.
    state            VARCHAR(16)  CHARACTER SET ascii   COLLATE ascii_bin   NOT NULL,
    payload          LONGBLOB     NOT NULL,
    attempts         INT UNSIGNED NOT NULL DEFAULT 0,
    max_attempts     INT UNSIGNED NOT NULL,
    fence            BIGINT UNSIGNED NOT NULL DEFAULT 0,
    created_at       BIGINT       NOT NULL,
    due_at           BIGINT       NOT NULL,
    started_at       BIGINT       NULL,
    finished_at      BIGINT       NULL,
    deadline         BIGINT       NULL,
    timeout_ms       BIGINT       NULL,
    retry            TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    last_error       TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    worker           VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    lease_until      BIGINT       NULL,
    cancel_requested TINYINT(1)   NOT NULL DEFAULT 0,
    debounce_key     VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    -- due_at while the task waits (CREATED/PENDING), NULL otherwise: the
    -- claim scans one index range in due order, and finished tasks are not
    -- in it at all.
    ready_at         BIGINT AS (IF(state IN ('CREATED', 'PENDING'), due_at, NULL)) STORED,
    -- The debounce key while the task waits, NULL otherwise: the unique key
    -- below binds a key to at most one waiting task and lets go of it as
    -- soon as the task is claimed (MySQL has no partial indexes).
    waiting_key      VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
                     AS (IF(state IN ('CREATED', 'PENDING'), debounce_key, NULL)) STORED,
    PRIMARY KEY (ns, id),
    UNIQUE KEY uk_waiting_key (ns, waiting_key),
    -- claim: ns = ? AND ready_at <= now ORDER BY ready_at
    KEY ix_ready (ns, ready_at),
    -- reap: ns = ? AND state = 'RUNNING' AND lease_until < now
    KEY ix_lease (ns, state, lease_until),
    -- trim (state IN (...) AND finished_at < cutoff), counts (GROUP BY state),
    -- list (state = ? ORDER BY finished_at, id)
    KEY ix_finished (ns, state, finished_at)
) ENGINE = InnoDB;

-- One row per namespace that ever had a leader; the row stays when a term
-- ends so the fencing token only ever grows.
CREATE TABLE IF NOT EXISTS reliable_executor_leaders (
    ns        VARCHAR(64)  CHARACTER SET ascii   COLLATE ascii_bin   NOT NULL,
    worker    VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    token     BIGINT UNSIGNED NOT NULL,
    until_ms  BIGINT       NOT NULL,
    PRIMARY KEY (ns)
) ENGINE = InnoDB;
