-- Issue 16, part 2: fleet-wide queue limits.
--
-- 1. `reliable_executor_queues` keeps a row while the queue is paused OR has
--    limits (resuming an unlimited queue or clearing the limits of an
--    unpaused one deletes it). The limits: `concurrency` (most RUNNING at
--    once), the token bucket `rate_starts` per `rate_per_ms` with
--    `rate_burst` tokens, its state `tokens` (fractional, as of `tokens_at`
--    on the server's clock, in epoch ms) and `throttled`, the running total
--    of claims a limit cut short. NULL limit columns are no limit. Values
--    outside the ranges `QueueLimits::validate` accepts (a hand-edited row)
--    stop the queue's claims and are logged: see `limits.rs`.
-- 2. `ix_lease` gains `queue` as its last column: the RUNNING tasks of a
--    queue are counted from the index alone (the limited claim, the wait and
--    `queues()`), a range over the namespace's RUNNING entries however many
--    tasks wait or finished. `queue` never changes, so the index is written
--    exactly when it was before (state and lease changes); the reaper's
--    range (`state = 'RUNNING' AND lease_until < now`) is its prefix as
--    before.

ALTER TABLE reliable_executor_queues
    ADD COLUMN concurrency INT UNSIGNED NULL,
    ADD COLUMN rate_starts INT UNSIGNED NULL,
    ADD COLUMN rate_per_ms BIGINT UNSIGNED NULL,
    ADD COLUMN rate_burst  INT UNSIGNED NULL,
    ADD COLUMN tokens      DOUBLE NOT NULL DEFAULT 0,
    ADD COLUMN tokens_at   BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN throttled   BIGINT UNSIGNED NOT NULL DEFAULT 0;

ALTER TABLE reliable_executor_tasks
    DROP KEY ix_lease,
    ADD KEY ix_lease (ns, state, lease_until, queue);
