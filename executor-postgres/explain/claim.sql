BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
WITH c AS (SELECT ctid FROM reliable_executor_tasks WHERE ns = :'ns' AND queue = 'default'
  AND state IN ('CREATED', 'PENDING') AND due_at <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
  AND NOT EXISTS (SELECT 1 FROM reliable_executor_queues p WHERE p.ns = :'ns' AND p.queue = 'default' AND (p.paused OR
   (p.concurrency IS NOT NULL OR p.rate_starts IS NOT NULL OR p.rate_per_ms IS NOT NULL OR p.rate_burst IS NOT NULL)))
  ORDER BY priority DESC, due_at, id LIMIT 64 FOR UPDATE SKIP LOCKED),
u AS (UPDATE reliable_executor_tasks t SET state = 'RUNNING', fence = t.fence + 1, attempts = t.attempts + 1,
  started_at = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT),
  lease_until = (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + 30000, worker = 'w'
  WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM c)) RETURNING t.*)
SELECT x.lim, u.* FROM (SELECT EXISTS (SELECT 1 FROM reliable_executor_queues p WHERE p.ns = :'ns' AND p.queue = 'default'
  AND NOT p.paused AND (p.concurrency IS NOT NULL OR p.rate_starts IS NOT NULL)) AS lim) x LEFT JOIN u ON TRUE;
ROLLBACK;
