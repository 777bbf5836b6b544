-- Issue 18: list the tasks of one state and one name, page by page, over
-- millions of tasks. `ix_name` is `ix_finished` with the name between the
-- state and the time, so `list` with a name reads one range of it in the
-- same `(finished_at, id)` order (the primary key's `id` ends every
-- secondary index). `name` never changes, so the index is written exactly
-- when `ix_finished` is (submit, state changes, delete). InnoDB builds it in
-- place without blocking writes; on a large table it takes a while: see
-- docs/upgrading.md.

ALTER TABLE reliable_executor_tasks
    ADD KEY ix_name (ns, state, name, finished_at);
