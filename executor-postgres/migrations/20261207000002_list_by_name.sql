-- Issue 18: list the tasks of one state and one name, page by page, over
-- millions of tasks. `ix_name` is `ix_finished` with the name between the
-- state and the time, so `list` with a name reads one range of it in the
-- same `(finished_at, id)` order. `name` never changes, so the index gets an
-- entry exactly when `ix_finished` does (every new row version). A plain
-- CREATE INDEX (migrations run in a transaction) blocks writes to the table
-- while it builds: on a large table, create it CONCURRENTLY by hand first
-- (docs/upgrading.md); IF NOT EXISTS then skips it here.

CREATE INDEX IF NOT EXISTS ix_name ON reliable_executor_tasks (ns, state, name, finished_at, id);
