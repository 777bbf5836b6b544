-- After complete_batch.sql changed fewer rows than leases: the fence and state
-- of each tell which completions landed.
-- $1 namespace, $2 the ids.
SELECT id, fence, state
FROM reliable_executor_tasks
WHERE ns = $1
  AND id = ANY($2)
