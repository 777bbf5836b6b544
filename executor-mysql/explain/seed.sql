-- The data the explain script (run.sh) plans the statements on, in the
-- database rex_explain after the migrations: namespace 'app' with 1,000,000
-- completed tasks (a day of history), 20,000 waiting (half due, half in the
-- future), 64 running (10 with an expired lease), 1,000 dead letter, all in
-- the default queue, priorities 0 to 9; 200,000 more waiting and due in queue
-- 'bulk', paused. Namespace 'other': 200,000 completed. MariaDB: uses the
-- SEQUENCE engine's seq_1_to_N tables.

SET @now = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED);
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
