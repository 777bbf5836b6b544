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

/// The queues that are paused or have limits.
macro_rules! queues {
    () => {
        "reliable_executor_queues"
    };
}

/// The server's clock in epoch milliseconds: `statement_timestamp()`, the
/// start of the current statement. Not `now()`, which is the start of the
/// transaction (a statement inside a user's long transaction would stamp an
/// old time), and not `clock_timestamp()`, which is volatile: it changes
/// during the statement, so the planner cannot use `due_at <= it` as an
/// index bound and every row would see another "now". `statement_timestamp()`
/// is stable within a statement, so it bounds index ranges like a constant.
macro_rules! now_ms {
    () => {
        "(FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)"
    };
}

/// The waiting states, as the partial indexes name them.
macro_rules! waiting {
    () => {
        "state IN ('CREATED', 'PENDING')"
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

/// [`task_columns!`] and the attempt log as text: what `get` and the tier
/// moves read. Claims and list pages leave the log out, so they read what
/// they did before it existed.
macro_rules! task_columns_with_log {
    () => {
        concat!(crate::sql::task_columns!(), ", attempt_log::text AS attempt_log")
    };
}

/// The attempt log of the row aliased `t` with one entry appended (a
/// `jsonb_build_object(..)` expression), trimmed to the newest 20
/// ([`executor_core::MAX_ATTEMPT_LOG`]): the value of `SET attempt_log = `
/// in the statement of the transition that ends the attempt. A value that
/// is not an array (NULL, or edited by hand) starts afresh.
macro_rules! log_append {
    ($entry:expr) => {
        concat!(
            "(CASE WHEN jsonb_typeof(t.attempt_log) = 'array' THEN CASE WHEN jsonb_array_length(t.attempt_log) >= 20 \
             THEN t.attempt_log - 0 ELSE t.attempt_log END ELSE '[]'::jsonb END) || jsonb_build_array(",
            $entry,
            ")"
        )
    };
}

/// Longest error text, in characters, one attempt log entry keeps
/// ([`executor_core::MAX_ERROR_LEN`], counted in characters by `left`).
macro_rules! log_error_chars {
    () => {
        "8192"
    };
}

/// [`task_columns!`] of the table aliased `t`.
macro_rules! t_task_columns {
    () => {
        "t.id, t.name, t.state, t.payload, t.attempts, t.max_attempts, t.fence, t.created_at, t.due_at, \
         t.started_at, t.finished_at, t.deadline, t.timeout_ms, t.retry, t.last_error, t.worker, \
         t.lease_until, t.cancel_requested, t.debounce_key, t.queue, t.priority"
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
    leaders, limited, log_append, log_error_chars, now_ms, queues, schedules, t_task_columns, task_columns,
    task_columns_with_log, tasks, waiting, workers,
};

/// Run once on every connection the storage takes from the pool. A lock
/// wait of 2 s at most: no statement of this crate holds locks across a
/// client round trip (but the limited claim, itself bounded by the idle
/// timeout of its transaction), so a longer wait means a foreign holder (a
/// DBA's open transaction); the statement fails with a retryable error
/// instead of stalling heartbeats and finishes behind it (invariant 9).
/// READ COMMITTED is PostgreSQL's default and is what the statements
/// assume; it is set in case the server's default is another.
pub(crate) const SESSION_SETUP: &str = "SET lock_timeout = '2s'; \
     SET default_transaction_isolation = 'read committed'; SET application_name = 'reliable-executor'";

/// Largest `attempts` (`INTEGER`): a row at it cannot be claimed without an
/// out-of-range error, so the claim moves it to `ERROR` instead (as it does
/// a fence at `BIGINT`'s maximum: `claim.rs`, `at_max!`).
pub(crate) const MAX_ATTEMPTS_COLUMN: u32 = i32::MAX as u32;

/// Milliseconds of a duration as the signed BIGINT the columns hold, capped
/// at [`executor_core::MAX_DURATION`]: every duration from a user is
/// validated against that bound at the entry points; internal ones (a lease,
/// a leadership term, a retention) are capped here so that `now + d` can
/// never overflow a BIGINT whatever a caller passes.
pub(crate) fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.min(executor_core::MAX_DURATION).as_millis()).unwrap_or(i64::MAX)
}

/// A timestamp as the signed BIGINT the columns hold.
pub(crate) fn ts(t: executor_core::Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// A `u64` (a fence, a token) as the signed BIGINT the columns hold; values
/// above `i64::MAX` (never stored) saturate.
pub(crate) fn big(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A `u32` (attempts) as the signed INTEGER the columns hold.
pub(crate) fn int(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// Longest `last_error` stored, in bytes: free text from handlers, kept to
/// a size that reads back quickly in lists and pages. Cut on a character
/// boundary, with a marker.
const MAX_ERROR_BYTES: usize = 60_000;

/// `text` cut to [`MAX_ERROR_BYTES`], without NUL characters (PostgreSQL's
/// text cannot hold them: the statement would fail and leave the task
/// `RUNNING` until its lease expired).
pub(crate) fn clip_error(text: &str) -> String {
    let text =
        if text.contains('\0') { std::borrow::Cow::Owned(text.replace('\0', "\\0")) } else { text.into() };
    if text.len() <= MAX_ERROR_BYTES {
        return text.into_owned();
    }
    let mut end = MAX_ERROR_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (cut from {} bytes)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_errors_are_cut_on_a_char_boundary_and_nul_is_escaped() {
        assert_eq!(clip_error("short"), "short");
        assert_eq!(clip_error("a\0b"), "a\\0b");
        let long = "é".repeat(40_000);
        let cut = clip_error(&long);
        assert!(cut.len() < 60_100, "{}", cut.len());
        assert!(cut.ends_with("(cut from 80000 bytes)"), "{}", &cut[cut.len() - 40..]);
    }
}
