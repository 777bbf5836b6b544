-- Deletes the lapsed announcements of a namespace.
-- $1 namespace.
-- params: ns
DELETE
FROM reliable_executor_workers
WHERE ns = $1
  AND until_ms <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
