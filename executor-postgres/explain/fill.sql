INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at)
SELECT :'ns', 't' || lpad(g::text, 8, '0'), 'noop', 'CREATED', '{}'::bytea, 3, 1, 1000 + g FROM generate_series(1, :n) g;
-- and as many finished ones, as a queue that has run for a while has
INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at, finished_at)
SELECT :'ns', 'd' || lpad(g::text, 8, '0'), 'noop', 'COMPLETED', '{}'::bytea, 3, 1, 1000 + g, 2000 + g FROM generate_series(1, :n) g;
ANALYZE reliable_executor_tasks;
