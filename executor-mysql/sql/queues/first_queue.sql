-- The first queue name of a namespace: one dive into `ix_queue`, which the
-- optimizer takes whatever its statistics say (`Select tables optimized
-- away`). With next_queue.sql, a walk over the namespace's queue names.
-- ?1 namespace.
SELECT MIN(queue) AS queue
FROM reliable_executor_tasks
WHERE ns = ?
