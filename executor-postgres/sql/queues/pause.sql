-- Pauses a queue: its row in the queues table, created or flagged. Every claim
-- statement reads it, so the pause holds for every process from the next claim
-- on.
-- $1 namespace, $2 queue.
-- params: ns, queue
INSERT INTO reliable_executor_queues (ns, queue, paused, tokens_at)
VALUES ($1, $2, TRUE, (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT))
ON CONFLICT (ns, queue)
DO UPDATE SET paused = TRUE
