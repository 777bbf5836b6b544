-- Issue 15: cron schedules. One row per (namespace, schedule name): the
-- definition as the JSON of `executor_core::schedule::Schedule`, and the
-- leader's progress through it. The cursor and the fence only move through
-- one conditional UPDATE (cursor still as read, fence not newer), so a
-- deposed leader never moves a schedule its successor has moved.

CREATE TABLE IF NOT EXISTS reliable_executor_schedules (
    ns          VARCHAR(64)  CHARACTER SET ascii   COLLATE ascii_bin   NOT NULL,
    -- Names are at most 100 bytes of UTF-8, so 100 utf8mb4 characters
    -- always hold them; `_bin` so names compare as the bytes they are.
    name        VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    -- The schedule's JSON. It carries the tasks' payload, escaped, so its
    -- size is bounded only by max_allowed_packet: LONGTEXT.
    definition  LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    paused      TINYINT(1)   NOT NULL DEFAULT 0,
    -- Epoch milliseconds on the server's clock: every tick at or before it
    -- is handled.
    cursor_ms   BIGINT UNSIGNED NOT NULL,
    -- The fencing token of the leader that last moved the cursor.
    fence       BIGINT UNSIGNED NOT NULL DEFAULT 0,
    -- The task of the last fired tick; as wide as the tasks' id column.
    last_task   VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    PRIMARY KEY (ns, name)
) ENGINE = InnoDB;
