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

/// The workers' announcements.
macro_rules! workers {
    () => {
        "reliable_executor_workers"
    };
}

/// The cron schedules.
macro_rules! schedules {
    () => {
        "reliable_executor_schedules"
    };
}

/// The queues that are paused or have limits (issue 16).
macro_rules! queues {
    () => {
        "reliable_executor_queues"
    };
}

/// Every rank a waiting task can have (`queue_rank = 9 - priority`): an IN
/// list rather than a range, so `queue_rank IN RANKS AND ready_at <= now`
/// is ten ranges of `ix_queue` whose rows come in claim order (a range on
/// `queue_rank` alone would leave `ready_at` to a filter and read every
/// waiting task of the queue that is not yet due).
macro_rules! ranks {
    () => {
        "(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)"
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
         debounce_key, queue, priority"
    };
}

/// [`task_columns!`] and the attempt log: what `get` and the tier moves
/// read. Claims and list pages leave the log out, so they read what they
/// did before it existed.
macro_rules! task_columns_with_log {
    () => {
        concat!(crate::sql::task_columns!(), ", attempt_log")
    };
}

/// The attempt log with one entry appended (a `JSON_OBJECT(..)`
/// expression), trimmed to the newest 20 ([`executor_core::MAX_ATTEMPT_LOG`]):
/// the value of `SET attempt_log = ` in the statement of the transition that
/// ends the attempt. A column that is not a JSON array (NULL, or edited by
/// hand with the checks off) starts afresh rather than failing the
/// statement. MySQL assigns left to right, so it comes first in a `SET`,
/// before the columns it reads (`attempts`, `worker`, `started_at`) change.
macro_rules! log_append {
    ($entry:expr) => {
        concat!(
            "JSON_ARRAY_APPEND(CASE WHEN JSON_VALID(attempt_log) THEN CASE WHEN JSON_TYPE(attempt_log) = 'ARRAY' \
             THEN CASE WHEN JSON_LENGTH(attempt_log) >= 20 THEN JSON_REMOVE(attempt_log, '$[0]') \
             ELSE attempt_log END ELSE '[]' END ELSE '[]' END, '$', ",
            $entry,
            ")"
        )
    };
}

/// Longest error text, in characters, one attempt log entry keeps
/// ([`executor_core::MAX_ERROR_LEN`], counted in characters by `LEFT`).
macro_rules! log_error_chars {
    () => {
        "8192"
    };
}

/// A condition on one task by primary key that is exact: the `_bin`
/// collations pad with spaces, so `id = 'pad'` alone also matches a row
/// whose id was edited to `'pad '`. `TaskId` refuses whitespace, so only a
/// hand-edited row can differ in trailing spaces; comparing the byte length
/// too costs nothing once the primary key found the row. Binds: ns, id,
/// id length (see [`bind_task`]).
macro_rules! by_task {
    () => {
        "ns = ? AND id = ? AND LENGTH(id) = ?"
    };
}

/// Whether the queues row `p` holds any limit column: such a queue is
/// claimed only through the limited transaction (`limits.rs`), a corrupt
/// one included (it then claims nothing until its limits are set again).
macro_rules! limited {
    () => {
        "(p.concurrency IS NOT NULL OR p.rate_starts IS NOT NULL OR p.rate_per_ms IS NOT NULL OR p.rate_burst IS NOT NULL)"
    };
}

pub(crate) use {
    by_task, leaders, limited, log_append, log_error_chars, now_ms, queues, ranks, schedules, task_columns,
    task_columns_with_log, tasks, workers,
};

/// Binds the three values of [`by_task!`].
pub(crate) fn bind_task<'q>(
    q: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
    ns: &'q executor_core::Namespace,
    id: &'q executor_core::TaskId,
) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    q.bind(ns.as_str()).bind(id.as_str()).bind(u32::try_from(id.as_str().len()).unwrap_or(u32::MAX))
}

/// Run once on every connection the storage takes from the pool, in one
/// round trip. READ COMMITTED: the claim's and the reap's locking reads
/// take no gap locks, so they never block a concurrent INSERT. A lock wait
/// of 2 s instead of the server's 50 s: no statement of this crate holds
/// locks across a client round trip, so a wait longer than a statement
/// means a foreign holder (a DBA's open transaction, a process of an older
/// release); the statement fails with a retryable 1205 instead of stalling
/// heartbeats and finishes behind it (invariant 9).
pub(crate) const SESSION_SETUP: &str =
    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; SET SESSION innodb_lock_wait_timeout = 2";

/// Columns the store holds for values the core types bound more loosely.
pub(crate) const ID_COLUMN_CHARS: usize = 191;
/// Width of the `name` column, in characters.
pub(crate) const NAME_COLUMN_CHARS: usize = 255;

/// Largest `attempts` (`INT UNSIGNED`) and `fence` (`BIGINT UNSIGNED`): a
/// row at either cannot be claimed or reaped without an out-of-range error,
/// so the statements that bump them skip it and move it to `ERROR`.
pub(crate) const MAX_ATTEMPTS_COLUMN: u32 = u32::MAX;
/// See [`MAX_ATTEMPTS_COLUMN`].
pub(crate) const MAX_FENCE_COLUMN: u64 = u64::MAX;

/// Milliseconds of a duration as the signed BIGINT the columns hold, capped
/// at [`executor_core::MAX_DURATION`]: every duration from a user is
/// validated against that bound at the entry points; internal ones (a lease,
/// a leadership term, a retention) are capped here so that `now + d` can
/// never overflow a BIGINT (error 1690) whatever a caller passes.
pub(crate) fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.min(executor_core::MAX_DURATION).as_millis()).unwrap_or(i64::MAX)
}

/// A timestamp as the signed BIGINT the columns hold.
pub(crate) fn ts(t: executor_core::Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// A token for one claim or reap statement: the rows it changed are read
/// back by their ids and this token. Random per process (std's hasher
/// seed) plus a counter, so two statements never share one in practice, and
/// a collision would still need the same ids.
pub(crate) fn token() -> u64 {
    use std::{
        hash::{BuildHasher, RandomState},
        sync::{
            OnceLock,
            atomic::{AtomicU64, Ordering},
        },
    };
    static SEED: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| RandomState::new().hash_one(std::process::id()));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    // An odd multiplier visits every u64 before repeating.
    seed.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
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
