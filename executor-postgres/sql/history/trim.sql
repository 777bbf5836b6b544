-- Deletes the throughput minutes before a cutoff (the leader's trim).
-- $1 namespace, $2 the cutoff (epoch ms).
-- params: ns, before_ms
DELETE
FROM reliable_executor_history
WHERE ns = $1
  AND minute < $2
