-- Waiting tasks due before a time, earliest first, with their attempt logs: the
-- queues' ranges of `ix_queue` up to the time (ten per queue, so only the tasks
-- due before it are read), the first n ids sorted by due time in the index alone
-- and their rows joined by primary key.
-- ?1 namespace, then the queues with waiting tasks, then ?2 the time (epoch ms),
-- ?3 the most rows, ?4 namespace. `/*SLICE:queues*/?` stands for one placeholder per queue: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at,
    finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested,
    debounce_key, queue, priority, attempt_log
FROM reliable_executor_tasks
JOIN (SELECT id AS due_id
      FROM reliable_executor_tasks
      WHERE ns = ?
        AND queue IN (/*SLICE:queues*/?)
        AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
        AND ready_at < ?
      ORDER BY ready_at
      LIMIT ?) due ON id = due.due_id
WHERE ns = ?
ORDER BY ready_at
