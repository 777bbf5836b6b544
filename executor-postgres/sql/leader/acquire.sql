-- Takes the namespace's leadership term if it is free or expired (token + 1),
-- renews it if the worker already holds it (same token), else changes nothing,
-- decided on the server's clock; returns the holder after the statement.
-- $1 namespace, $2 worker, $3 the term in ms.
-- params: ns, worker, term_ms
INSERT INTO reliable_executor_leaders AS l (ns, worker, token, until_ms)
VALUES ($1, $2, 1, (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $3)
ON CONFLICT (ns)
DO UPDATE SET token = CASE
        WHEN l.until_ms <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
        THEN l.token + 1 ELSE l.token END,
    worker = CASE
        WHEN l.until_ms <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) THEN $2
        ELSE l.worker END,
    until_ms = CASE
        WHEN l.until_ms <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
        OR l.worker = $2 THEN (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) + $3
        ELSE l.until_ms END
RETURNING worker, token, until_ms
