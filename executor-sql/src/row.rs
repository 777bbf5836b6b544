//! Reading task rows into [`TaskRecord`]s, whatever the dialect's column
//! types. A row that does not parse (a hand-edited state, bad JSON, a
//! negative time) becomes a reason string the callers turn into
//! [`Error::Corrupt`] or an `ERROR` state; nothing here panics.

use executor_core::{
    Error, Namespace, QueueName, Result as CoreResult, RetryPolicy, TaskId, TaskRecord, TaskState, Timestamp,
    WorkerId,
};
use sqlx::{ColumnIndex, Database, Decode, Row, Type};

use crate::{
    Dialect,
    stmt::{Cols, Value, execute},
};

/// The counters of a task row: the columns whose types differ by dialect
/// (unsigned on MySQL, signed with a CHECK on PostgreSQL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `attempts`.
    pub attempts: u32,
    /// `max_attempts`.
    pub max_attempts: u32,
    /// `fence`.
    pub fence: u64,
    /// `priority`.
    pub priority: u8,
}

/// Reads one row selected with the task columns the claim and list
/// statements name (`id, name, state, payload, attempts, .., priority`).
///
/// # Errors
/// The reason the row does not parse.
pub fn task<D: Dialect>(row: &<D::Db as Database>::Row) -> Result<TaskRecord, String> {
    let id = TaskId::new(row.text("id")?).map_err(|e| e.to_string())?;
    let state = exact_state(&row.text("state")?)?;
    let retry = row
        .opt_text("retry")?
        .map(|r| serde_json::from_str::<RetryPolicy>(&r).map_err(|e| format!("retry policy `{r}`: {e}")))
        .transpose()?;
    let worker = row.opt_text("worker")?.map(WorkerId::new).transpose().map_err(|e| e.to_string())?;
    let timeout = row
        .opt_int("timeout_ms")?
        .map(|t| u64::try_from(t).map(std::time::Duration::from_millis))
        .transpose()
        .map_err(|_| "negative timeout_ms".to_owned())?;
    let mut task = TaskRecord::new(
        id,
        row.text("name")?,
        state,
        row.bytes("payload")?,
        time(row, "created_at")?,
        time(row, "due_at")?,
    );
    let counters = D::counters(row)?;
    task.attempts = counters.attempts;
    task.max_attempts = counters.max_attempts;
    task.fence = counters.fence;
    task.priority = counters.priority;
    executor_core::queue::check_priority(task.priority).map_err(|e| e.to_string())?;
    task.started_at = opt_time(row, "started_at")?;
    task.finished_at = opt_time(row, "finished_at")?;
    task.deadline = opt_time(row, "deadline")?;
    task.timeout = timeout;
    task.retry = retry;
    task.last_error = row.opt_text("last_error")?;
    task.worker = worker;
    task.lease_until = opt_time(row, "lease_until")?;
    task.cancel_requested = row.flag("cancel_requested")?;
    task.debounce_key = row.opt_text("debounce_key")?;
    task.queue = QueueName::new(row.text("queue")?).map_err(|e| e.to_string())?;
    Ok(task)
}

/// [`task`] of a row that selected the attempt log too, the log included.
///
/// # Errors
/// As [`task`].
pub fn task_with_log<D: Dialect>(row: &<D::Db as Database>::Row) -> Result<TaskRecord, String> {
    let mut task = task::<D>(row)?;
    task.attempt_log = executor_core::storage::attempt_log_from_column(&task.id, row.opt_text("attempt_log"));
    Ok(task)
}

/// Moves a row that cannot run (it does not parse, or a counter is at its
/// column's maximum) to `ERROR` with the reason, so it is dead-lettered
/// instead of stopping every claim behind it. `token` is NULL
/// ([`Value::OptUint`]`(None)`) for a row that still waits, else what the
/// dialect's claim marked it `RUNNING` under (a fence, a claim token), as
/// the row holds it.
///
/// # Errors
/// Store failures.
pub async fn to_error<D: Dialect>(
    d: &D,
    ns: &Namespace,
    raw_id: &str,
    token: Value<'_>,
    reason: &str,
) -> CoreResult<()> {
    tracing::warn!(task = %raw_id, %reason, "corrupt task row moved to ERROR");
    let reason = clip_error(&format!("corrupt record: {reason}")).into_owned();
    let args = [
        ("reason", Value::Text(&reason)),
        ("ns", Value::Text(ns.as_str())),
        ("id", Value::Text(raw_id)),
        ("id_len", Value::Int(i64::try_from(raw_id.len()).unwrap_or(i64::MAX))),
        ("token", token),
    ];
    execute(d, &D::SQL.claim_move_to_error, &args).await.map(drop)
}

/// The most bytes of an error text a row keeps: `last_error` holds 64 KB
/// (MySQL's `TEXT`), and an over-long value would fail the statement
/// under strict mode or be cut silently without it. A reason is free
/// text, so it is cut here instead.
pub const MAX_ERROR_BYTES: usize = 60_000;

/// `text` as a row keeps it: a NUL byte written `\\0` (PostgreSQL's text
/// cannot hold one), cut to [`MAX_ERROR_BYTES`] on a character boundary
/// with a marker saying how long it was.
pub fn clip_error(text: &str) -> std::borrow::Cow<'_, str> {
    let text: std::borrow::Cow<'_, str> =
        if text.contains('\0') { std::borrow::Cow::Owned(text.replace('\0', "\\0")) } else { text.into() };
    if text.len() <= MAX_ERROR_BYTES {
        return text;
    }
    let mut end = MAX_ERROR_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… (cut from {} bytes)", &text[..end], text.len()))
}

/// Column `name` of `row`, or why it does not decode.
///
/// # Errors
/// The column is missing or does not decode as a `T`.
pub fn col<'r, R, T>(row: &'r R, name: &'static str) -> Result<T, String>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get::<T, _>(name).map_err(|e| format!("column `{name}`: {e}"))
}

/// A time column (milliseconds since the epoch, signed BIGINT).
///
/// # Errors
/// As [`col`], or a negative value.
pub fn time<R: Cols + ?Sized>(row: &R, name: &'static str) -> Result<Timestamp, String> {
    let v = row.int(name)?;
    u64::try_from(v).map(Timestamp::from_millis).map_err(|_| format!("column `{name}` is negative: {v}"))
}

/// A time column that may be NULL.
///
/// # Errors
/// As [`time`].
pub fn opt_time<R: Cols + ?Sized>(row: &R, name: &'static str) -> Result<Option<Timestamp>, String> {
    row.opt_int(name)?
        .map(|v| {
            u64::try_from(v)
                .map(Timestamp::from_millis)
                .map_err(|_| format!("column `{name}` is negative: {v}"))
        })
        .transpose()
}

/// The raw id of a row, for rows that do not parse.
pub fn raw_id<R: Cols + ?Sized>(row: &R) -> String {
    row.text("id").unwrap_or_default()
}

/// The attempt log of a row that selected it, read leniently
/// ([`executor_core::storage::attempt_log_from_column`]): NULL, or a value
/// that does not parse, reads as empty, so the task stays readable.
pub fn attempt_log<R>(row: &R, id: &TaskId) -> Vec<executor_core::attempt_log::AttemptRecord>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    executor_core::storage::attempt_log_from_column(id, row.try_get::<Option<String>, _>("attempt_log"))
}

/// A state exactly as the statements write it. `TaskState`'s parser
/// ignores case, but the indexes and every statement compare exactly: a
/// `'created'` would read as waiting yet never be claimed. The
/// `ck_tasks_state` constraint keeps such values out; this keeps a row
/// written without it (a server that ignores CHECK, the constraint
/// dropped) from reading as valid.
///
/// # Errors
/// Anything but one of the eight states, spelled exactly.
pub fn exact_state(raw: &str) -> Result<TaskState, String> {
    TaskState::ALL
        .into_iter()
        .find(|st| st.as_str() == raw)
        .ok_or_else(|| format!("state `{raw}` is not one of the eight states, spelled exactly"))
}

/// A stored queue name as a [`QueueName`], or `None` (logged) for a
/// hand-edited value, which the queue list leaves out.
pub fn queue_name(name: &str) -> Option<QueueName> {
    match QueueName::new(name) {
        Ok(q) => Some(q),
        Err(e) => {
            tracing::warn!(queue = %name, error = %e, "stored queue name is not valid; left out of the queue list");
            None
        }
    }
}

/// A [`TaskId`] for an error about a row whose own id may not be valid:
/// whitespace and control characters become `_`, so the message still
/// points at the row.
pub fn id_for_error(raw: &str) -> TaskId {
    let mut cleaned: String =
        raw.chars().map(|c| if c.is_whitespace() || c.is_control() { '_' } else { c }).collect();
    while cleaned.len() > executor_core::id::MAX_ID_LEN {
        cleaned.pop();
    }
    TaskId::new(cleaned).unwrap_or_else(|_| TaskId::generate())
}

/// [`Error::Corrupt`] for a row.
pub fn corrupt(raw: &str, reason: String) -> Error {
    Error::Corrupt { id: id_for_error(raw), reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_spelled_exactly_and_bad_ids_still_name_their_row() {
        assert_eq!(exact_state("RUNNING"), Ok(TaskState::Running));
        assert!(exact_state("running").is_err());
        assert_eq!(id_for_error("a b\n").as_str(), "a_b_");
        assert!(matches!(corrupt("x", "bad".into()), Error::Corrupt { .. }));
    }

    #[test]
    fn error_texts_are_cut_on_a_character_boundary_and_lose_no_nul() {
        assert_eq!(clip_error("short"), "short");
        assert_eq!(clip_error("a\0b"), "a\\0b");
        let long = "é".repeat(40_000);
        let cut = clip_error(&long);
        assert!(cut.len() < MAX_ERROR_BYTES + 100, "{}", cut.len());
        assert!(cut.ends_with("(cut from 80000 bytes)"), "{}", &cut[cut.len() - 40..]);
    }
}
