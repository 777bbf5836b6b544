-- The `finished_at` of the newest task past the newest `max` of a class of
-- finished states: that task and every older one are over the count. Each state
-- of the class is its own walk of `max + 1` entries of `ix_finished` from the
-- newest, merged.
-- $1 namespace, $2 the class's states, $3 max.
SELECT x.finished_at
FROM UNNEST($2::TEXT[]) AS s(state)
CROSS JOIN LATERAL (SELECT finished_at
                    FROM reliable_executor_tasks t
                    WHERE t.ns = $1
                      AND t.state = s.state
                      AND t.finished_at IS NOT NULL
                    ORDER BY t.finished_at DESC
                    LIMIT $3 + 1) x
ORDER BY x.finished_at DESC
LIMIT 1
OFFSET $3
