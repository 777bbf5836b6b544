-- Claim, 1/3, last branch (-1): the plan's queues that have limits and are not
-- paused, which select_candidates.sql skipped: one primary-key lookup per queue.
-- Its columns are cast to the candidates' types, since it ends their UNION ALL.
-- ?1 namespace, then the queues of the plan. `/*SLICE:queues*/?` stands for one placeholder per queue: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
(SELECT CAST(-1 AS SIGNED) AS branch, CONVERT(p.queue USING utf8mb4) COLLATE utf8mb4_bin AS id,
    CAST(0 AS UNSIGNED), CAST(0 AS UNSIGNED), CAST(0 AS UNSIGNED), CAST(0 AS UNSIGNED),
    CAST(0 AS SIGNED)
 FROM reliable_executor_queues p
 WHERE p.ns = ?
   AND p.queue IN (/*SLICE:queues*/?)
   AND p.paused = 0
   AND (p.concurrency IS NOT NULL OR p.rate_starts IS NOT NULL OR p.rate_per_ms IS NOT NULL
       OR p.rate_burst IS NOT NULL))
