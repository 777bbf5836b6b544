-- Deletes up to $5 tasks of a class of finished states past its age or its
-- count. A CTE, not `id IN (subquery)`: a locking subquery with a LIMIT may be
-- run again by the plan and hand over other rows (a conformance test saw 4
-- deleted with a limit of 2); a CTE runs once. The rows it locked are deleted by
-- `ctid`, as the claim updates its rows.
-- $1 namespace, $2 the class's states, $3 the age in ms (NULL: none), $4 the
-- count's cutoff (NULL: none), $5 the most rows.
WITH c AS (SELECT ctid
           FROM reliable_executor_tasks
           WHERE ns = $1
             AND state = ANY($2::TEXT[])
             AND (finished_at <= (FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT) - $3
                 OR finished_at <= $4)
           LIMIT $5
           FOR UPDATE SKIP LOCKED)
DELETE
FROM reliable_executor_tasks
WHERE ctid = ANY(ARRAY(SELECT ctid
                       FROM c))
