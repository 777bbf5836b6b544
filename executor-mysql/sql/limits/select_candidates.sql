-- Limited claim, 3/5: the queue's due tasks in claim order (ten ranges of
-- `ix_queue`, see claim/select_candidates.sql), skipping rows another claimer
-- holds; one more than the limits allow, which tells whether they cut the
-- claim short. Then claim/take_candidates.sql and claim/read_claimed.sql.
-- ?1 namespace, ?2 queue, ?3 the most rows.
SELECT id, attempts, fence, priority
FROM reliable_executor_tasks
WHERE ns = ?
  AND queue = ?
  AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
  AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
ORDER BY queue_rank, ready_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
