-- Query plans of the statements MySqlStorage runs, on a seeded copy of the
-- schema (MariaDB: uses the SEQUENCE engine's seq_1_to_N tables).
--   mysql -uroot -h127.0.0.1 --table < executor-mysql/explain/plans.sql
-- (run from the repository root: it SOURCEs the migration file).
-- ANALYZE runs the statement and adds r_rows, the rows actually read;
-- statements that change data run inside a transaction that is rolled back
-- (the storage itself runs every statement autocommit).

DROP DATABASE IF EXISTS rex_explain;
CREATE DATABASE rex_explain;
USE rex_explain;
SOURCE executor-mysql/migrations/20261130000001_tasks.sql;
SOURCE executor-mysql/migrations/20261130000002_claim_token_and_state_check.sql;
SOURCE executor-mysql/migrations/20261201000001_workers.sql;
SOURCE executor-mysql/migrations/20261202000001_schedules.sql;
SOURCE executor-mysql/migrations/20261203000001_queues.sql;

SET @now = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED);
-- Namespace 'app': 1,000,000 completed tasks (a day of history), 20,000
-- waiting (half due, half in the future), 64 running (10 with an expired
-- lease), 1,000 dead letter, all in the default queue, priorities 0 to 9;
-- 200,000 more waiting and due in queue 'bulk', paused. Namespace
-- 'other': 200,000 completed.
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at, finished_at)
  SELECT 'app', CONCAT('c', seq), 'noop', 'COMPLETED', 'null', 1, 3, 1, @now - 90000000, @now - 90000000, @now - 90000000, @now - 90000000 + seq * 90 FROM seq_1_to_1000000;
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at, priority)
  SELECT 'app', CONCAT('w', seq), 'noop', IF(seq % 2, 'CREATED', 'PENDING'), 'null', 3, @now, @now + (CAST(seq AS SIGNED) - 10000) * 10, seq % 10 FROM seq_1_to_20000;
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at, queue, priority)
  SELECT 'app', CONCAT('b', seq), 'noop', 'CREATED', 'null', 3, @now, @now - 600000 + seq % 1000, 'bulk', seq % 10 FROM seq_1_to_200000;
INSERT INTO reliable_executor_queues (ns, queue, paused) VALUES ('app', 'bulk', 1);
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at, worker, lease_until)
  SELECT 'app', CONCAT('r', seq), 'noop', 'RUNNING', 'null', 1, 3, 1, @now, @now, @now, 'w-1', IF(seq <= 10, @now - 1000, @now + 30000) FROM seq_1_to_64;
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, finished_at, last_error)
  SELECT 'app', CONCAT('f', seq), 'noop', 'FAILED', 'null', 3, 3, 3, @now - 900000000, @now - 900000000, @now - 900000000 + seq, 'boom' FROM seq_1_to_1000;
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at, finished_at)
  SELECT 'other', CONCAT('c', seq), 'noop', 'COMPLETED', 'null', 1, 3, 1, @now, @now, @now, @now FROM seq_1_to_200000;
UPDATE reliable_executor_tasks SET debounce_key = 'user-7' WHERE ns = 'app' AND id = 'w3';
ANALYZE TABLE reliable_executor_tasks;

SELECT 'claim 1/3: candidates of the default queue (autocommit, locks end with the statement)' AS statement;
ANALYZE SELECT CAST(0 AS SIGNED) AS branch, id, attempts, fence, priority
  FROM reliable_executor_tasks WHERE ns = 'app' AND queue = 'default' AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
  AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
  AND NOT EXISTS (SELECT 1 FROM reliable_executor_queues p WHERE p.ns = 'app' AND p.queue = 'default' AND p.paused = 1)
  ORDER BY queue_rank, ready_at, id LIMIT 128 FOR UPDATE SKIP LOCKED;

SELECT 'claim 1/3 of a plan over default and the paused bulk: one UNION ALL' AS statement;
ANALYZE (SELECT CAST(0 AS SIGNED) AS branch, id, attempts, fence, priority
  FROM reliable_executor_tasks WHERE ns = 'app' AND queue = 'default' AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
  AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
  AND NOT EXISTS (SELECT 1 FROM reliable_executor_queues p WHERE p.ns = 'app' AND p.queue = 'default' AND p.paused = 1)
  ORDER BY queue_rank, ready_at, id LIMIT 128 FOR UPDATE SKIP LOCKED)
  UNION ALL (SELECT CAST(1 AS SIGNED) AS branch, id, attempts, fence, priority
  FROM reliable_executor_tasks WHERE ns = 'app' AND queue = 'bulk' AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
  AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)
  AND NOT EXISTS (SELECT 1 FROM reliable_executor_queues p WHERE p.ns = 'app' AND p.queue = 'bulk' AND p.paused = 1)
  ORDER BY queue_rank, ready_at, id LIMIT 128 FOR UPDATE SKIP LOCKED);

SELECT 'claim 2/3: the UPDATE of the candidates, in due order, with a token' AS statement;
BEGIN;
ANALYZE UPDATE reliable_executor_tasks SET fence = fence + 1, attempts = attempts + 1, cancel_requested = 0,
  started_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), lease_until = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + 30000,
  worker = 'w-2', claim_token = 77, state = 'RUNNING'
  WHERE ns = 'app' AND id IN ('w2', 'w4', 'w6', 'w8', 'w10', 'w12', 'w14', 'w16')
  AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AND attempts < 4294967295 AND fence < 18446744073709551615
  ORDER BY queue_rank, ready_at, id LIMIT 4;

SELECT 'claim 3/3: the claimed rows read back by ids and token' AS statement;
ANALYZE SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at, finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested, debounce_key, queue, priority
  FROM reliable_executor_tasks WHERE ns = 'app' AND id IN ('w2', 'w4', 'w6', 'w8', 'w10', 'w12', 'w14', 'w16')
  AND state = 'RUNNING' AND claim_token = 77;
ROLLBACK;

SELECT 'reap 1/3: expired leases no one is changing (then an UPDATE and a read back by ids, as the claim)' AS statement;
ANALYZE SELECT id, fence
  FROM reliable_executor_tasks WHERE ns = 'app' AND state = 'RUNNING' AND lease_until < CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) ORDER BY lease_until LIMIT 1000 FOR UPDATE SKIP LOCKED;

SELECT 'trim: completed and cancelled past a 1-day retention (then DELETE by primary key)' AS statement;
ANALYZE SELECT id, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS now_ms FROM reliable_executor_tasks
  WHERE ns = 'app' AND state IN ('COMPLETED', 'CANCELLED') AND finished_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - 86400000 LIMIT 1000 FOR UPDATE SKIP LOCKED;

SELECT 'trim: dead letter past a 7-day retention' AS statement;
ANALYZE SELECT id, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS now_ms FROM reliable_executor_tasks
  WHERE ns = 'app' AND state IN ('FAILED', 'TIMEOUT', 'ERROR') AND finished_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - 604800000 LIMIT 1000 FOR UPDATE SKIP LOCKED;

SELECT 'trim: the DELETE of the ids read' AS statement;
BEGIN;
ANALYZE DELETE FROM reliable_executor_tasks WHERE ns = 'app' AND state IN ('COMPLETED', 'CANCELLED') AND finished_at <= @now - 86400000 AND id IN ('c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8');
ROLLBACK;

SELECT 'finish: one UPDATE conditional on the fence' AS statement;
BEGIN;
ANALYZE UPDATE reliable_executor_tasks SET finished_at = @now, worker = NULL, lease_until = NULL, state = 'COMPLETED'
  WHERE ns = 'app' AND id = 'r20' AND LENGTH(id) = 3 AND fence = 1 AND state = 'RUNNING';
ROLLBACK;

SELECT 'heartbeat: all leases of a worker in one UPDATE' AS statement;
BEGIN;
ANALYZE UPDATE reliable_executor_tasks SET lease_until = @now + 30000
  WHERE ns = 'app' AND id IN ('r20', 'r21', 'r22') AND state = 'RUNNING' AND (id, fence) IN (('r20', 1), ('r21', 1), ('r22', 1));
ROLLBACK;

SELECT 'wait_for_work: the earliest waiting due time, a loose index scan (one dive per queue and rank)' AS statement;
ANALYZE SELECT MIN(d.due) - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS wait_ms FROM (SELECT queue, MIN(ready_at) AS due
  FROM reliable_executor_tasks WHERE ns = 'app' AND queue_rank <= 9 GROUP BY ns, queue, queue_rank) d;

SELECT 'wait_for_queues: the same over served queues that are not paused' AS statement;
ANALYZE SELECT MIN(d.due) - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS wait_ms FROM (SELECT queue, MIN(ready_at) AS due
  FROM reliable_executor_tasks WHERE ns = 'app' AND queue IN ('default', 'bulk') AND queue_rank <= 9 GROUP BY ns, queue, queue_rank) d
  WHERE NOT EXISTS (SELECT 1 FROM reliable_executor_queues p WHERE p.ns = 'app' AND p.queue = d.queue AND p.paused = 1);

SELECT 'queues 1/3 (and due_before 1/2): the queue names, one dive each (Select tables optimized away)' AS statement;
ANALYZE SELECT MIN(queue) AS queue FROM reliable_executor_tasks WHERE ns = 'app';
ANALYZE SELECT MIN(queue) AS queue FROM reliable_executor_tasks WHERE ns = 'app' AND queue > 'bulk';

SELECT 'queues 1/3, then: which of them have waiting tasks, one dive per name' AS statement;
ANALYZE SELECT 'bulk' AS queue, CAST(MAX(queue_rank) AS SIGNED) AS top FROM reliable_executor_tasks WHERE ns = 'app' AND queue = 'bulk'
  UNION ALL SELECT 'default', CAST(MAX(queue_rank) AS SIGNED) FROM reliable_executor_tasks WHERE ns = 'app' AND queue = 'default';

SELECT 'queues 2/3: their figures, over the waiting tasks only (then the paused rows by primary key)' AS statement;
ANALYZE SELECT queue, COUNT(*) AS waiting, CAST(SUM(ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)) AS SIGNED) AS due,
  MIN(IF(ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), ready_at, NULL)) AS oldest_due FROM reliable_executor_tasks
  WHERE ns = 'app' AND queue IN ('bulk', 'default') AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9) GROUP BY queue;

SELECT 'due_before 2/2: the tier mover, ids sorted in the index, rows by primary key' AS statement;
ANALYZE SELECT id, name, state, due_at, queue, priority FROM reliable_executor_tasks JOIN (SELECT id AS due_id FROM reliable_executor_tasks
  WHERE ns = 'app' AND queue IN ('bulk', 'default') AND queue_rank IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9) AND ready_at < @now - 599000
  ORDER BY ready_at LIMIT 1000) due ON id = due.due_id WHERE ns = 'app' ORDER BY ready_at;

SELECT 'debounce: the task waiting under a key' AS statement;
ANALYZE SELECT id FROM reliable_executor_tasks WHERE ns = 'app' AND waiting_key = 'user-7';

SELECT 'list: a later page of COMPLETED' AS statement;
ANALYZE SELECT id FROM reliable_executor_tasks WHERE ns = 'app' AND state = 'COMPLETED'
  AND (finished_at > @now - 50000000 OR (finished_at = @now - 50000000 AND id > 'c1')) ORDER BY finished_at, id LIMIT 101;

SELECT 'counts' AS statement;
ANALYZE SELECT state, COUNT(*) AS n FROM reliable_executor_tasks WHERE ns = 'app' GROUP BY state;

DROP DATABASE rex_explain;
