-- Adds throughput counts: one upsert for every task name, in the order of the
-- primary key (so concurrent adders lock rows in one order), into the minute of
-- the server's clock; adds from many processes sum.
-- $1 namespace, $2 names, $3 succeeded, $4 failed (arrays of one length).
INSERT INTO reliable_executor_history AS t (ns, minute, name, succeeded, failed)
SELECT $1, ((FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) / 60000) * 60000,
    u.name, u.succeeded, u.failed
FROM UNNEST($2::text[], $3::bigint[], $4::bigint[]) AS u(name, succeeded, failed)
ORDER BY u.name COLLATE "C"
ON CONFLICT (ns, minute, name)
DO UPDATE SET succeeded = t.succeeded + EXCLUDED.succeeded,
    failed = t.failed + EXCLUDED.failed
