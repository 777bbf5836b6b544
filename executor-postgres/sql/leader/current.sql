-- The namespace's unexpired term, if any.
-- $1 namespace.
-- params: ns
SELECT worker, token, until_ms
FROM reliable_executor_leaders
WHERE ns = $1
  AND until_ms > (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)
