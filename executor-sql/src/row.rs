//! Reading task rows: what does not depend on the dialect's column types.

use executor_core::{Error, QueueName, TaskId, TaskState, Timestamp};
use sqlx::{ColumnIndex, Decode, Row, Type};

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
pub fn time<R>(row: &R, name: &'static str) -> Result<Timestamp, String>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let v: i64 = col(row, name)?;
    u64::try_from(v).map(Timestamp::from_millis).map_err(|_| format!("column `{name}` is negative: {v}"))
}

/// A time column that may be NULL.
///
/// # Errors
/// As [`time`].
pub fn opt_time<R>(row: &R, name: &'static str) -> Result<Option<Timestamp>, String>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    for<'r> Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
{
    let v: Option<i64> = col(row, name)?;
    v.map(|v| {
        u64::try_from(v).map(Timestamp::from_millis).map_err(|_| format!("column `{name}` is negative: {v}"))
    })
    .transpose()
}

/// The raw id of a row, for rows that do not parse.
pub fn raw_id<R>(row: &R) -> String
where
    R: Row,
    &'static str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get::<String, _>("id").unwrap_or_default()
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
}
