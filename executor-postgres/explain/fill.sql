-- The data the explain script (run.sh) plans the statements on, in
-- namespace :'ns': :n tasks waiting in the default queue, and as many
-- finished ones, as a queue that has run for a while has; 64 running, 10 of
-- them with an expired lease.
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at)
SELECT :'ns', 't' || lpad(g::text, 8, '0'), 'noop', 'CREATED', '{}'::bytea, 3, 1, 1000 + g FROM generate_series(1, :n) g;
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at, finished_at)
SELECT :'ns', 'd' || lpad(g::text, 8, '0'), 'noop', 'COMPLETED', '{}'::bytea, 3, 1, 1000 + g, 2000 + g FROM generate_series(1, :n) g;
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at, worker, lease_until)
SELECT :'ns', 'r' || lpad(g::text, 8, '0'), 'noop', 'RUNNING', '{}'::bytea, 1, 3, 1, 1, 1000, 1000, 'w-1',
  CASE WHEN g <= 10 THEN 1000 ELSE 9000000000000 END FROM generate_series(1, 64) g;
ANALYZE reliable_executor_tasks;
