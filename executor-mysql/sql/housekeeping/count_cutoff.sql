-- The `finished_at` of the newest task past the newest `max` of a class of
-- finished states: that task and every older one are over the count. Each state
-- walks at most `max + 1` entries of `ix_finished` backwards (named: with the
-- states as an IN list and one ORDER BY, MariaDB scanned the namespace by
-- primary key and sorted it, 220,000 rows read for a namespace of 220,000), and
-- the server picks from those.
-- `/*UNION:states*/(..)` stands for one branch per state of the class, joined by
-- UNION ALL: ? namespace, ? state, ? max + 1. Then ? max.
SELECT finished_at
FROM (/*UNION:states*/(SELECT finished_at
                       FROM reliable_executor_tasks FORCE INDEX (ix_finished)
                       WHERE ns = ?
                         AND state = ?
                         AND finished_at IS NOT NULL
                       ORDER BY finished_at DESC
                       LIMIT ?)) newest
ORDER BY finished_at DESC
LIMIT 1
OFFSET ?
