-- Upserts a worker's announcement: its handler names (a JSON array) and
-- `now + ttl` on the server's clock.
-- ?1 namespace, ?2 worker, ?3 names, ?4 the ttl in ms.
-- params: ns, worker, names, ttl_ms
INSERT INTO reliable_executor_workers (ns, worker, names, until_ms)
VALUES (?, ?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?)
ON DUPLICATE KEY UPDATE names =
VALUES(names), until_ms =
VALUES(until_ms)
