//! Reading a task row into a [`TaskRecord`]. A row that does not parse (a
//! hand-edited state, bad JSON, a negative time) becomes a reason string the
//! callers turn into [`executor_core::Error::Corrupt`] or an `ERROR` state;
//! nothing here panics.

use executor_core::{Error, QueueName, RetryPolicy, TaskId, TaskRecord, TaskState, Timestamp, WorkerId};
use sqlx::{Row, postgres::PgRow};

/// The attempt log of a row that selected it (`sql/query/get.sql`, the tier
/// moves), read leniently
/// ([`executor_core::storage::attempt_log_from_column`]): NULL, or a value
/// that does not parse, reads as empty, so the task stays readable.
pub(crate) fn attempt_log(row: &PgRow, id: &TaskId) -> Vec<executor_core::AttemptRecord> {
    executor_core::storage::attempt_log_from_column(id, row.try_get::<Option<String>, _>("attempt_log"))
}

/// [`task_from_row`] of a row that selected the attempt log too, the log
/// included.
pub(crate) fn task_with_log(row: &PgRow) -> Result<TaskRecord, String> {
    let mut task = task_from_row(row)?;
    task.attempt_log = attempt_log(row, &task.id);
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
        col::<String>(row, "name")?,
        state,
        col(row, "payload")?,
        time(row, "created_at")?,
        time(row, "due_at")?,
    );
    task.attempts = unsigned(col::<i32>(row, "attempts")?, "attempts")?;
    task.max_attempts = unsigned(col::<i32>(row, "max_attempts")?, "max_attempts")?;
    task.fence = unsigned(col::<i64>(row, "fence")?, "fence")?;
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
    task.priority = unsigned(col::<i16>(row, "priority")?, "priority")?;
    executor_core::queue::check_priority(task.priority).map_err(|e| e.to_string())?;
    Ok(task)
}

/// A state exactly as the statements write it. `TaskState`'s parser
/// ignores case, but the partial indexes and every statement compare
/// exactly: a `'created'` would read as waiting yet never be claimed. The
/// `ck_tasks_state` constraint keeps such values out; this keeps a row
/// written with the constraint dropped from reading as valid.
pub(crate) fn exact_state(raw: &str) -> Result<TaskState, String> {
    TaskState::ALL
        .into_iter()
        .find(|st| st.as_str() == raw)
        .ok_or_else(|| format!("state `{raw}` is not one of the eight states, spelled exactly"))
}

/// The raw id of a row, for rows that do not parse.
pub(crate) fn raw_id(row: &PgRow) -> String {
    row.try_get::<String, _>("id").unwrap_or_default()
}

/// A [`TaskId`] for an error about a row whose own id may not be valid:
/// whitespace and control characters become `_`, so the message still
/// points at the row.
pub(crate) fn id_for_error(raw: &str) -> TaskId {
    let mut cleaned: String =
        raw.chars().map(|c| if c.is_whitespace() || c.is_control() { '_' } else { c }).collect();
    while cleaned.len() > executor_core::MAX_ID_LEN {
        cleaned.pop();
    }
    TaskId::new(cleaned).unwrap_or_else(|_| TaskId::generate())
}

/// [`Error::Corrupt`] for a row.
pub(crate) fn corrupt(raw: &str, reason: String) -> Error {
    Error::Corrupt { id: id_for_error(raw), reason }
}

/// Column `name` of `row`, or why it does not decode.
pub(crate) fn col<'r, T>(row: &'r PgRow, name: &'static str) -> Result<T, String>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get::<T, _>(name).map_err(|e| format!("column `{name}`: {e}"))
}

fn time(row: &PgRow, name: &'static str) -> Result<Timestamp, String> {
    let v: i64 = col(row, name)?;
    u64::try_from(v).map(Timestamp::from_millis).map_err(|_| format!("column `{name}` is negative: {v}"))
}

fn opt_time(row: &PgRow, name: &'static str) -> Result<Option<Timestamp>, String> {
    let v: Option<i64> = col(row, name)?;
    v.map(|v| {
        u64::try_from(v).map(Timestamp::from_millis).map_err(|_| format!("column `{name}` is negative: {v}"))
    })
    .transpose()
}

/// A signed column as the unsigned value the record holds; a negative one
/// (possible only with the CHECK dropped) is a reason.
fn unsigned<S, U>(v: S, name: &'static str) -> Result<U, String>
where
    S: Copy + std::fmt::Display,
    U: TryFrom<S>,
{
    U::try_from(v).map_err(|_| format!("column `{name}` is out of range: {v}"))
}
