-- Limited claim, 4/5: whether due tasks are left after the claim, which tells
-- whether a limit cut it short.
-- $1 namespace, $2 queue.
SELECT EXISTS (SELECT 1
               FROM reliable_executor_tasks
               WHERE ns = $1
                 AND queue = $2
                 AND state IN ('CREATED', 'PENDING')
                 AND due_at <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)) AS more
