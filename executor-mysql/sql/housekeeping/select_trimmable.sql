-- Trim, 1/2: up to n tasks of a class of finished states past its age or its
-- count, and the server's now. One range read of `ix_finished`, named: left to
-- itself MariaDB read the namespace by primary key, every retained task whose
-- id sorts before the expired ones (20,999 rows read to find 1,000 behind 20,000
-- retained). SKIP LOCKED, autocommit: rows someone holds are left for the next
-- tick, not waited for.
-- `/*LITERALS:states*/(..)` marks the list of the class's states, which the
-- driver writes in as literals: ('COMPLETED', 'CANCELLED') or ('FAILED',
-- 'TIMEOUT', 'ERROR').
-- The line marked `-- if age` is sent when the class has an age limit, the one
-- marked `-- if count` when it has a count limit (with its cutoff).
-- ?1 namespace, ?2 the age in ms (if age), ?3 the cutoff (if count), ?4 the
-- most rows.
SELECT id, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS now_ms
FROM reliable_executor_tasks FORCE INDEX (ix_finished)
WHERE ns = ?
  AND state IN /*LITERALS:states*/('COMPLETED', 'CANCELLED')
  AND (FALSE
       OR finished_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - ? -- if age
       OR finished_at <= ? -- if count
    ) LIMIT ? FOR UPDATE SKIP LOCKED
