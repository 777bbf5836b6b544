//! SQL fragments shared by the statements: table names, the server clock and
//! the column list every task read uses. Macros rather than constants so the
//! statements stay `&'static str` (sqlx 0.9 only runs static or builder SQL).

/// The tasks table.
macro_rules! tasks {
    () => {
        "reliable_executor_tasks"
    };
}

/// The leadership table.
macro_rules! leaders {
    () => {
        "reliable_executor_leaders"
    };
}

/// The server's clock in epoch milliseconds. `NOW(3)` is fixed for the
/// length of a statement, so the optimizer treats this as a constant and
/// range-scans on it.
macro_rules! now_ms {
    () => {
        "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
    };
}

/// Every column [`crate::row::task_from_row`] reads, in one place.
macro_rules! task_columns {
    () => {
        "id, name, state, payload, attempts, max_attempts, fence, created_at, due_at, started_at, \
         finished_at, deadline, timeout_ms, retry, last_error, worker, lease_until, cancel_requested, \
         debounce_key"
    };
}

pub(crate) use {leaders, now_ms, task_columns, tasks};

/// Starts a transaction at READ COMMITTED in one round trip. Set per
/// transaction: under the server's default REPEATABLE READ, concurrent
/// `FOR UPDATE SKIP LOCKED` claimers take gap locks and deadlock each other.
pub(crate) const BEGIN_READ_COMMITTED: &str =
    "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION";

/// Columns the store holds for values the core types bound more loosely.
pub(crate) const ID_COLUMN_CHARS: usize = 191;
/// Width of the `name` column, in characters.
pub(crate) const NAME_COLUMN_CHARS: usize = 255;

/// Milliseconds of a duration as the signed BIGINT the columns hold.
pub(crate) fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A timestamp as the signed BIGINT the columns hold.
pub(crate) fn ts(t: executor_core::Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// Appends `(?, ?, ...)` binding `ids`. The list is padded to a power of
/// two by repeating its last id (harmless in `IN`), so a statement takes at
/// most a dozen shapes and stays in sqlx's prepared-statement cache instead
/// of being prepared anew for every batch size.
pub(crate) fn push_in_list<'a>(
    qb: &mut sqlx::QueryBuilder<sqlx::MySql>,
    ids: impl IntoIterator<Item = &'a str>,
) {
    let ids: Vec<&str> = ids.into_iter().collect();
    qb.push("(");
    let mut sep = qb.separated(", ");
    for id in &ids {
        sep.push_bind((*id).to_owned());
    }
    if let Some(last) = ids.last() {
        for _ in ids.len()..ids.len().next_power_of_two() {
            sep.push_bind((*last).to_owned());
        }
    }
    qb.push(")");
}

/// Longest `last_error` stored, in bytes: the column is a `TEXT` (65,535
/// bytes), and an over-long value would fail the statement under strict
/// mode (leaving the task `RUNNING` until its lease expired) or be cut
/// silently without it. A reason is free text, so it is cut here instead,
/// on a character boundary, with a marker.
const MAX_ERROR_BYTES: usize = 60_000;

/// `text` cut to [`MAX_ERROR_BYTES`].
pub(crate) fn clip_error(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_ERROR_BYTES {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = MAX_ERROR_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… (cut from {} bytes)", &text[..end], text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_errors_are_cut_on_a_char_boundary() {
        assert_eq!(clip_error("short"), "short");
        let long = "é".repeat(40_000);
        let cut = clip_error(&long);
        assert!(cut.len() < 60_100, "{}", cut.len());
        assert!(cut.ends_with("(cut from 80000 bytes)"), "{}", &cut[cut.len() - 40..]);
    }

    #[test]
    fn in_lists_are_padded_to_a_power_of_two() {
        for (n, placeholders) in [(1, 1), (2, 2), (3, 4), (5, 8), (64, 64), (65, 128)] {
            let ids: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
            let mut qb = sqlx::QueryBuilder::<sqlx::MySql>::new("SELECT 1 WHERE id IN ");
            push_in_list(&mut qb, ids.iter().map(String::as_str));
            assert_eq!(qb.sql().as_str().matches('?').count(), placeholders, "{n} ids");
        }
    }
}
