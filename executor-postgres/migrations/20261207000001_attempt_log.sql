-- The attempt log: the attempts of a task that ended before its current
-- one (TaskRecord::attempt_log), as a jsonb array of
-- {"attempt", "worker", "started_at", "ended_at", "outcome", "error"},
-- oldest first, at most 20 entries (executor_core::MAX_ATTEMPT_LOG).
--
-- NULL until the first retry, reap back to PENDING or requeue appends to
-- it, in that transition's own UPDATE (`||`, and `- 0` to drop the oldest
-- past 20). Completions never touch it. No index: only `get` and the tier
-- moves read it, by primary key. A value that is not an array (edited by
-- hand) is treated as empty by the statements and the reader, so it never
-- stops a task. A nullable column without a default is a catalog-only
-- change: no table rewrite.

ALTER TABLE reliable_executor_tasks ADD COLUMN IF NOT EXISTS attempt_log jsonb NULL;
