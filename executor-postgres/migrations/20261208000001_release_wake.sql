-- Wake-ups when a concurrency slot frees. A claimer's wait leaves out a
-- queue at its concurrency limit (its due tasks would end every wait at
-- once), so the task that leaves RUNNING in such a queue (finished, dead
-- lettered, reaped to a dead letter, deleted) sends its namespace on the
-- channel `reliable_executor`, and every process's claimers of that
-- namespace look again. A task going back to waiting is announced by
-- `tr_tasks_waiting` already; a queue without a concurrency limit frees
-- nothing anyone waits for and sends nothing.
CREATE OR REPLACE FUNCTION reliable_executor_notify_released() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM reliable_executor_queues q
               WHERE q.ns = OLD.ns AND q.queue = OLD.queue AND q.concurrency IS NOT NULL) THEN
        PERFORM pg_notify('reliable_executor', OLD.ns);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS tr_tasks_released ON reliable_executor_tasks;
CREATE TRIGGER tr_tasks_released AFTER UPDATE OF state ON reliable_executor_tasks
    FOR EACH ROW
    WHEN (OLD.state = 'RUNNING' AND NEW.state NOT IN ('RUNNING', 'CREATED', 'PENDING'))
    EXECUTE FUNCTION reliable_executor_notify_released();

DROP TRIGGER IF EXISTS tr_tasks_released_deleted ON reliable_executor_tasks;
CREATE TRIGGER tr_tasks_released_deleted AFTER DELETE ON reliable_executor_tasks
    FOR EACH ROW
    WHEN (OLD.state = 'RUNNING')
    EXECUTE FUNCTION reliable_executor_notify_released();
