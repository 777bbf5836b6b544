-- The attempt log: the attempts of a task that ended before its current
-- one (TaskRecord::attempt_log), as a JSON array of
-- {"attempt", "worker", "started_at", "ended_at", "outcome", "error"},
-- oldest first, at most 20 entries (executor_core::MAX_ATTEMPT_LOG).
--
-- NULL until the first retry, reap back to PENDING or requeue appends to
-- it, in that transition's own UPDATE (JSON_ARRAY_APPEND, JSON_REMOVE of
-- the oldest past 20). Completions never touch it. No index: only `get`
-- and the tier moves read it, by primary key.
--
-- LONGTEXT without a JSON_VALID check, on purpose: MariaDB checks a
-- table's constraints on every UPDATE of a row, so a row whose log was
-- edited into something that is no JSON (with check_constraint_checks
-- off) could no longer be claimed, finished or reaped, and would fail the
-- batch statements of its neighbours with it (invariant 7). Instead every
-- statement that appends treats a value that is not a JSON array as empty
-- (JSON_VALID / JSON_TYPE first), and the reader skips what does not parse,
-- so a hand edit never stops a task. A nullable column added last is an
-- instant change on MariaDB 10.3+ and MySQL 8.0.12+: no table rebuild.

ALTER TABLE reliable_executor_tasks
    ADD COLUMN attempt_log LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;
