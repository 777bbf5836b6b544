-- The namespace's leadership row, expired or not: who holds the term after
-- acquire.sql (which returns it already; this is the same read for a
-- dialect whose upsert cannot).
-- $1 namespace.
-- params: ns
SELECT worker, token, until_ms
FROM reliable_executor_leaders
WHERE ns = $1
