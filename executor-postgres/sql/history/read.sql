-- Every throughput bucket of a namespace from a minute on, by minute then name.
-- $1 namespace, $2 the first minute (epoch ms).
-- params: ns, since_ms
SELECT minute, name, succeeded, failed
FROM reliable_executor_history
WHERE ns = $1
  AND minute >= $2
ORDER BY minute, name
