-- The highest rank of a queue's tasks: the queue's last `ix_queue` entry, one
-- dive. Finished tasks have no rank and sort first, so a queue has waiting
-- tasks exactly when this is not NULL. The driver sends up to 500 of these in
-- one statement, joined by UNION ALL.
-- ?1 queue, ?2 namespace, ?3 queue.
SELECT ? AS queue, CAST(MAX(queue_rank) AS SIGNED) AS top
FROM reliable_executor_tasks
WHERE ns = ?
  AND queue = ?
