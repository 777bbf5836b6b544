-- Schema check: every column of the tasks table the statements use.
SELECT id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at,
    finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested,
    debounce_key, queue, priority, attempt_log, claim_token, ready_at, waiting_key, queue_rank,
    submit_nonce
FROM reliable_executor_tasks
LIMIT 0
