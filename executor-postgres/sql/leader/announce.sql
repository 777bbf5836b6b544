-- Upserts a worker's announcement: its handler names (a JSON array) and
-- `now + ttl` on the server's clock.
-- $1 namespace, $2 worker, $3 names, $4 the ttl in ms.
-- params: ns, worker, names, ttl_ms
INSERT INTO reliable_executor_workers (ns, worker, names, until_ms)
VALUES ($1, $2, $3, (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $4)
ON CONFLICT (ns, worker)
DO UPDATE SET names = EXCLUDED.names,
    until_ms = EXCLUDED.until_ms
