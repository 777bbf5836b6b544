-- Reap, 2/3: the expired leases select_expired.sql found, each row's outcome
-- decided in SQL on the row as it is under the statement's lock (the columns
-- are read before `state` is assigned): TIMEOUT past the deadline, FAILED with
-- no attempts left, else PENDING due now, with the lost attempt appended to its
-- attempt log (first in the SET, while `worker` still names the lost holder;
-- the reason is the `reason` the driver binds as well). The lease must still be
-- expired; the fence grows in every case, so the presumed-dead worker's late
-- finish is refused; a token marks the rows this statement changed.
-- ?1 the reason, ?2 the token, ?3 namespace, then the ids, then ?4 the fence
-- column's maximum. `/*SLICE:ids*/?` stands for one placeholder per id: the driver writes the group once per
-- element, separated by commas (padded to a power of two by repeating the last, so the statement takes at most a
-- dozen shapes and stays in the prepared-statement cache).
UPDATE reliable_executor_tasks
SET attempt_log = IF((NOT (deadline IS NOT NULL
        AND CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) >= deadline)
        AND NOT (attempts >= max_attempts)), JSON_ARRAY_APPEND(CASE WHEN JSON_VALID(attempt_log)
        THEN CASE WHEN JSON_TYPE(attempt_log) = 'ARRAY' THEN CASE
        WHEN JSON_LENGTH(attempt_log) >= 20 THEN JSON_REMOVE(attempt_log, '$[0]')
        ELSE attempt_log END ELSE '[]' END ELSE '[]' END, '$', JSON_OBJECT('attempt', attempts,
        'worker', worker, 'started_at', started_at, 'ended_at',
        CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), 'outcome', 'lease_expired', 'error',
        'lease expired (worker presumed dead)')), attempt_log),
    due_at = IF((NOT (deadline IS NOT NULL
        AND CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) >= deadline)
        AND NOT (attempts >= max_attempts)), CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), due_at),
    finished_at = IF((NOT (deadline IS NOT NULL
        AND CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) >= deadline)
        AND NOT (attempts >= max_attempts)), finished_at,
        CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)),
    state = CASE WHEN (deadline IS NOT NULL
        AND CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) >= deadline) THEN 'TIMEOUT'
        WHEN (attempts >= max_attempts) THEN 'FAILED' ELSE 'PENDING' END,
    fence = fence + 1,
    worker = NULL,
    lease_until = NULL,
    cancel_requested = 0,
    last_error = ?,
    claim_token = ?
WHERE ns = ?
  AND id IN (/*SLICE:ids*/?)
  AND state = 'RUNNING'
  AND lease_until < CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
  AND fence < ?
