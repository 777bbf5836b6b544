-- The nonces of the submits that stored some tasks: after an INSERT found an id
-- taken, the same nonce means the same submit sent again (its lost first try
-- stored it).
-- $1 namespace, $2 the ids.
SELECT id, submit_nonce
FROM reliable_executor_tasks
WHERE ns = $1
  AND id = ANY($2)
