-- How long until the earliest waiting task of a namespace is due (`wait_ms`,
-- NULL when none waits). The inner query is a loose index scan of `ix_queue`
-- (`Using index for group-by`): one dive per waiting (queue, rank), whatever
-- the number of tasks.
-- ?1 namespace.
SELECT MIN(d.due) - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS wait_ms
FROM (SELECT queue, MIN(ready_at) AS due
      FROM reliable_executor_tasks
      WHERE ns = ?
        AND queue_rank <= 9
      GROUP BY ns, queue, queue_rank) d
