-- How long until the earliest waiting task of the served queues is due
-- (`wait_ms`, NULL when none waits), over the queues not paused, not at their
-- concurrency limit and whose limits are valid. The inner query is a loose
-- index scan of `ix_queue` (`Using index for group-by`): one dive per waiting
-- (queue, rank), whatever the number of tasks. A queue at its concurrency
-- limit does not count (a finish in this process wakes its claimers when it
-- frees the slot, and other processes find it at their next poll). A queue
-- whose bucket holds less than one token counts from when its next token is
-- earned (plus a millisecond, so the wake finds it earned), as the memory
-- store's `next_claimable`.
-- ?1 namespace, then the queues, then ?2 namespace, ?3 namespace.
-- `/*SLICE:queues*/?` stands for one placeholder per queue: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
SELECT CAST(MIN(IF(p.rate_starts IS NULL, d.due, GREATEST(d.due,
    p.tokens_at + CEIL((1 - LEAST(GREATEST(p.tokens, 0),
    1)) * p.rate_per_ms / p.rate_starts) + 1))) AS SIGNED) - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS wait_ms
FROM (SELECT queue, MIN(ready_at) AS due
      FROM reliable_executor_tasks
      WHERE ns = ?
        AND queue IN (/*SLICE:queues*/?)
        AND queue_rank <= 9
      GROUP BY ns, queue, queue_rank) d
LEFT
JOIN reliable_executor_queues p ON p.ns = ?
  AND p.queue = d.queue
WHERE p.queue IS NULL OR (p.paused = 0 AND (p.concurrency IS NULL OR (p.concurrency <= 1000000
    AND p.concurrency > (SELECT COUNT(*)
                                                                                                                    FROM reliable_executor_tasks r
                                                                                                                    WHERE r.ns = ?
                                                                                                                      AND r.state = 'RUNNING'
                                                                                                                      AND r.queue = d.queue)))
                                                                                                                          AND (p.rate_starts IS NULL
                                                                                                                          OR (p.rate_starts BETWEEN 1
                                                                                                                          AND 1000000
                                                                                                                          AND p.rate_burst BETWEEN 1
                                                                                                                          AND 1000000
                                                                                                                          AND p.rate_per_ms BETWEEN 1
                                                                                                                          AND 86400000))
                                                                                                                          AND (p.rate_starts IS NOT NULL
                                                                                                                          OR (p.rate_per_ms IS NULL
                                                                                                                          AND p.rate_burst IS NULL)))
