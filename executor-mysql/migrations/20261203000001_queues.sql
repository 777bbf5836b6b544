-- Issue 16: named queues and priorities.
--
-- 1. `queue` (a `QueueName`: 1 to 64 bytes of [A-Za-z0-9-_.:], so ascii_bin)
--    and `priority` (0..9, higher claimed first). Rows that exist take the
--    defaults: the default queue, priority 0. No CHECK on the queue's
--    characters: a hand-edited value reads back as a corrupt record (the
--    claim moves it to ERROR with the reason) instead of being refused here.
-- 2. `queue_rank`: 9 - priority while the task waits (CREATED/PENDING),
--    NULL otherwise, like `ready_at`. MariaDB 10.6 ignores DESC in an index
--    definition, so "highest priority first" is an ascending rank. LEAST
--    keeps a row whose priority escaped the CHECK (check_constraint_checks
--    off) from failing every statement that writes it "out of range"; the
--    claim reads its priority back and moves it to ERROR.
-- 3. `ix_queue (ns, queue, queue_rank, ready_at)` replaces `ix_ready (ns,
--    ready_at)`: the claim of one queue is ten ranges of it (`queue_rank IN
--    (0..9) AND ready_at <= now`), read in claim order (rank, due, then the
--    primary key's id) with no filesort, and other queues' tasks are outside
--    every range. The earliest due time (wake-up) and the waiting queues are
--    loose index scans of it (`Using index for group-by`); keeping `ix_ready`
--    as well would cost every submit, claim and retry a third index write.
-- 4. `reliable_executor_queues`: one row per (namespace, queue) ever paused;
--    `paused` says whether it is now. The claim reads it inside its own
--    SELECT, so a pause stops claims from the next claim statement on.
--
-- One ALTER, so the table is rebuilt once and the change is all or nothing.

ALTER TABLE reliable_executor_tasks
    ADD COLUMN queue    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'default',
    ADD COLUMN priority TINYINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN queue_rank TINYINT UNSIGNED
        AS (IF(state IN ('CREATED', 'PENDING'), 9 - LEAST(priority, 9), NULL)) STORED,
    ADD CONSTRAINT ck_tasks_priority CHECK (priority <= 9),
    ADD KEY ix_queue (ns, queue, queue_rank, ready_at),
    DROP KEY ix_ready;

CREATE TABLE IF NOT EXISTS reliable_executor_queues (
    ns      VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    queue   VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    paused  TINYINT(1)  NOT NULL DEFAULT 0,
    PRIMARY KEY (ns, queue)
) ENGINE = InnoDB;
