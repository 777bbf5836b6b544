-- Takes the namespace's leadership term if it is free or expired (token + 1),
-- renews it if the worker already holds it (same token), else changes nothing;
-- decided on the server's clock. Assignments run left to right: token and
-- worker read the old until_ms; until_ms reads the new worker.
-- ?1 namespace, ?2 worker, ?3 the term in ms, ?4 and ?5 worker, ?6 the term in ms.
-- params: ns, worker, term_ms, worker, worker, term_ms
INSERT INTO reliable_executor_leaders (ns, worker, token, until_ms)
VALUES (?, ?, 1, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?)
ON DUPLICATE KEY UPDATE token = IF(until_ms <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED),
        token + 1, token),
    worker = IF(until_ms <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), ?, worker),
    until_ms = IF(worker = ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?, until_ms)
