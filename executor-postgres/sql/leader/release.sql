-- Ends the term early if this worker still holds it with this token; the row
-- stays, so the next term's token is larger.
-- $1 namespace, $2 worker, $3 token.
-- params: ns, worker, token
UPDATE reliable_executor_leaders
SET until_ms = 0
WHERE ns = $1
  AND worker = $2
  AND token = $3
