-- The figures of the queues with waiting tasks: ranges of `ix_queue` over the
-- waiting tasks only, on the server's clock.
-- ?1 namespace, then the queues. `/*SLICE:queues*/?` stands for one placeholder per queue: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
SELECT queue, COUNT(*) AS waiting,
    CAST(SUM(ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)) AS SIGNED) AS due,
    MIN(IF(ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), ready_at, NULL)) AS oldest_due
FROM reliable_executor_tasks
WHERE ns = ?
  AND queue IN (/*SLICE:queues*/?)
  AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
GROUP BY queue
