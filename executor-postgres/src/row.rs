//! Reading a task row into a [`TaskRecord`]. A row that does not parse (a
//! hand-edited state, bad JSON, a negative time) becomes a reason string the
//! callers turn into [`executor_core::Error::Corrupt`] or an `ERROR` state;
//! nothing here panics.

use executor_core::{QueueName, RetryPolicy, TaskId, TaskRecord, WorkerId};
use sqlx::postgres::PgRow;

/// [`task_from_row`] of a row that selected the attempt log too, the log
/// included.
pub(crate) fn task_with_log(row: &PgRow) -> Result<TaskRecord, String> {
    let mut task = task_from_row(row)?;
    task.attempt_log = executor_sql::row::attempt_log(row, &task.id);
    Ok(task)
}

/// Reads one row selected with the task columns the claim and list
/// statements name (`sql/claim/claim_queue.sql`).
pub(crate) fn task_from_row(row: &PgRow) -> Result<TaskRecord, String> {
    let id: String = col(row, "id")?;
    let id = TaskId::new(id).map_err(|e| e.to_string())?;
    let state: String = col(row, "state")?;
    let state = exact_state(&state)?;
    let retry: Option<String> = col(row, "retry")?;
    let retry = retry
        .map(|r| serde_json::from_str::<RetryPolicy>(&r).map_err(|e| format!("retry policy `{r}`: {e}")))
        .transpose()?;
    let worker: Option<String> = col(row, "worker")?;
    let worker = worker.map(WorkerId::new).transpose().map_err(|e| e.to_string())?;
    let timeout: Option<i64> = col(row, "timeout_ms")?;
    let timeout = timeout
        .map(|t| u64::try_from(t).map(std::time::Duration::from_millis))
        .transpose()
        .map_err(|_| "negative timeout_ms".to_owned())?;
    let mut task = TaskRecord::new(
        id,
        col::<_, String>(row, "name")?,
        state,
        col(row, "payload")?,
        time(row, "created_at")?,
        time(row, "due_at")?,
    );
    task.attempts = unsigned(col::<_, i32>(row, "attempts")?, "attempts")?;
    task.max_attempts = unsigned(col::<_, i32>(row, "max_attempts")?, "max_attempts")?;
    task.fence = unsigned(col::<_, i64>(row, "fence")?, "fence")?;
    task.started_at = opt_time(row, "started_at")?;
    task.finished_at = opt_time(row, "finished_at")?;
    task.deadline = opt_time(row, "deadline")?;
    task.timeout = timeout;
    task.retry = retry;
    task.last_error = col(row, "last_error")?;
    task.worker = worker;
    task.lease_until = opt_time(row, "lease_until")?;
    task.cancel_requested = col(row, "cancel_requested")?;
    task.debounce_key = col(row, "debounce_key")?;
    let queue: String = col(row, "queue")?;
    task.queue = QueueName::new(queue).map_err(|e| e.to_string())?;
    task.priority = unsigned(col::<_, i16>(row, "priority")?, "priority")?;
    executor_core::queue::check_priority(task.priority).map_err(|e| e.to_string())?;
    Ok(task)
}

pub(crate) use executor_sql::row::{col, corrupt, exact_state, id_for_error, opt_time, raw_id, time};

/// A signed column as the unsigned value the record holds; a negative one
/// (possible only with the CHECK dropped) is a reason.
fn unsigned<S, U>(v: S, name: &'static str) -> Result<U, String>
where
    S: Copy + std::fmt::Display,
    U: TryFrom<S>,
{
    U::try_from(v).map_err(|_| format!("column `{name}` is out of range: {v}"))
}
