-- Claim, 1/3: the due tasks of one queue, in claim order, as one branch of the
-- claim's candidate read. The driver sends one statement: a branch per queue of
-- the plan and per lock mode, joined by UNION ALL, then
-- select_limited_queues.sql. Autocommit: the locks end with the statement.
--
-- `queue_rank IN` lists ranks rather than a range, so with `ready_at <= now`
-- it is one range of `ix_queue` per rank whose rows come in claim order (a range
-- on `queue_rank` alone would leave `ready_at` to a filter and read every
-- waiting task of the queue that is not yet due). `/*LITERALS:ranks*/` marks the
-- list the driver writes in: the ranks this branch reads, as literals, so each
-- (queue, ranks) shape is one prepared statement whose ranges the optimizer sees.
--
-- A locking read of a rank with no due task is not free: InnoDB locks the first
-- record past the empty range, the head of the next rank, which every claimer is
-- locking. So only the ranks where recent claims found due tasks are read with
-- `FOR UPDATE SKIP LOCKED` (the line marked `-- if locked`); the others are read
-- by a second branch without it, a consistent read that takes no lock (the
-- UPDATE checks every candidate again under its row lock).
--
-- A paused queue, or one with limits (claimed only in its own transaction,
-- limits/*.sql), gives no rows: the queues row is read by the claim itself, so
-- a pause holds from the next claim statement on.
-- ?1 the branch (the queue's place in the plan), ?2 namespace, ?3 queue,
-- ?4 namespace, ?5 queue, ?6 the most rows (twice the claim's limit).
(SELECT CAST(? AS SIGNED) AS branch, id, attempts, fence, priority, queue_rank, ready_at
 FROM reliable_executor_tasks
 WHERE ns = ?
   AND queue = ?
   AND queue_rank IN /*LITERALS:ranks*/(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
   AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
   AND NOT EXISTS (SELECT 1
                   FROM reliable_executor_queues p
                   WHERE p.ns = ?
                     AND p.queue = ?
                     AND (p.paused = 1 OR (p.concurrency IS NOT NULL OR p.rate_starts IS NOT NULL
                         OR p.rate_per_ms IS NOT NULL OR p.rate_burst IS NOT NULL)))
 ORDER BY queue_rank, ready_at, id
 LIMIT ?
  FOR UPDATE SKIP LOCKED -- if locked
)
