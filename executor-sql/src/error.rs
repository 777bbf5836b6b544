//! Turning sqlx errors into [`executor_core::Error`], and retrying the lock
//! conflicts that concurrent statements are expected to hit now and then.
//!
//! `retryable` is a promise to the caller that the same call may succeed
//! later: a lost connection, a full pool, a lock conflict, a server that is
//! shutting down, starting or failing over. Anything a retry cannot fix (a
//! value out of range, a refused constraint, a bad URL or password, a
//! missing table) is not retryable, so a retrying caller stops instead of
//! looping forever. Which server errors are which is the dialect's
//! [`ErrorClass`]; what follows from the class is decided here, once.

use std::{future::Future, time::Duration};

use executor_core::{
    Error, TaskId,
    tls::{TlsFailure, TlsProblem},
};

use crate::conn::RunError;

/// What a dialect's server errors mean, told by their codes (never by their
/// text where the server gives a code).
pub trait ErrorClass {
    /// The server's name in messages ("MySQL", "PostgreSQL").
    const SERVER: &'static str;
    /// How many times a statement that lost a lock conflict is run again
    /// before the error reaches the caller.
    const LOCK_RETRIES: u32 = 8;

    /// Whether the server error `e` is a lock conflict the statement lost
    /// and that the server rolled back (a deadlock, a lock wait timeout, a
    /// serialization failure): running it again is safe.
    fn is_lock_conflict(e: &sqlx::Error) -> bool;

    /// Whether the server error `e` means "try again" (besides lock
    /// conflicts): too many connections, a shutdown, a failover, the
    /// server gone.
    fn is_transient(e: &sqlx::Error) -> bool;

    /// Whether the server error `e` says a table or column is missing: the
    /// schema is older than the statements, which no retry fixes.
    fn is_missing_schema(e: &sqlx::Error) -> bool;

    /// Whether the server error `e` is a duplicate of a unique key (the
    /// task's id, a bound debounce key).
    fn is_duplicate(e: &sqlx::Error) -> bool;

    /// For a server error saying a value does not fit its column (out of
    /// range, too long, a refused CHECK), its code as the server names it
    /// (`error 1406`, `SQLSTATE 22001`): the caller's data is wrong, not
    /// the store.
    fn bad_value(e: &sqlx::Error) -> Option<String>;

    /// Whether the server error `e` says the connection was lost mid-statement
    /// (MySQL's 2013 from a proxy), so a sent statement may have run.
    fn lost_mid_statement(e: &sqlx::Error) -> bool {
        let _ = e;
        false
    }

    /// A TLS problem told by a server error of the dialect's own (MySQL's
    /// refusal of a plain connection); rustls' errors and sqlx's own TLS
    /// errors are told by [`tls_failure`].
    fn tls_refusal(e: &sqlx::Error) -> Option<TlsProblem> {
        let _ = e;
        None
    }

    /// The setting of the URL or of the server that fixes `problem`.
    fn tls_fix(problem: TlsProblem) -> &'static str;
}

/// What a TLS handshake refused, by the type of the error: the rustls error
/// in the handshake's I/O error or in a `sqlx::Error::Tls` (with the
/// feature `tls`); a `sqlx::Error::Tls` without one (sqlx says then in a
/// message of its own that the server offers no TLS, or that a TLS file is
/// unusable); the dialect's own refusal ([`ErrorClass::tls_refusal`]).
/// `None` for anything else.
pub fn tls_failure<C: ErrorClass>(e: &sqlx::Error) -> Option<TlsProblem> {
    #[cfg(feature = "tls")]
    if let Some(problem) = executor_core::tls::find_rustls_error(e).and_then(TlsProblem::of) {
        return Some(problem);
    }
    match e {
        sqlx::Error::Tls(_) if !cfg!(feature = "tls") => Some(TlsProblem::NotBuilt),
        sqlx::Error::Tls(_) => Some(TlsProblem::NotStarted),
        _ => C::tls_refusal(e),
    }
}

/// The error of a pool's first connection: a TLS failure ([`tls_failure`])
/// is not retryable and says what is wrong and which setting fixes it;
/// anything else as [`storage`].
pub fn connect<C: ErrorClass>(e: sqlx::Error) -> Error {
    match tls_failure::<C>(&e) {
        Some(problem) => TlsFailure::new(C::SERVER, problem, C::tls_fix(problem), e).into(),
        None => storage::<C>(e),
    }
}

/// Whether the same call may succeed again after `e`.
pub fn is_retryable<C: ErrorClass>(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        // A reply out of step with its request: the connection is closed
        // (see `conn`) and the next call runs on a fresh one.
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(_) => C::is_lock_conflict(e) || C::is_transient(e),
        // A bad certificate or TLS setting does not heal; a bad URL, a
        // missing column, a value that does not decode neither.
        _ => false,
    }
}

/// Converts a driver error, saying whether the same call may succeed again.
/// A value the columns cannot hold is [`Error::Invalid`]: the caller's data
/// (or a hand-edited row) is wrong, not the store.
pub fn storage<C: ErrorClass>(e: sqlx::Error) -> Error {
    if let Some(code) = C::bad_value(&e) {
        let message = e.as_database_error().map(|d| d.message().to_owned()).unwrap_or_default();
        return Error::invalid("value", format!("the server refused it ({code}): {message}"));
    }
    let retryable = is_retryable::<C>(&e);
    Error::storage(e, retryable)
}

/// Whether a statement that was sent may have run with its answer lost:
/// the connection failed (an I/O error: reset, EOF, a broken pipe, TLS
/// failing mid-stream), a reply came out of step with its request
/// (`Protocol`), the driver's worker went away, or the server said the
/// connection was lost mid-statement. Any other error reply is the server
/// refusing the statement, which it rolled back.
pub fn answer_lost<C: ErrorClass>(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed => {
            true
        }
        sqlx::Error::Database(_) => C::lost_mid_statement(e),
        _ => false,
    }
}

/// The error of a statement that writes a submit's task `id` (its INSERT,
/// a debounce's write): [`Error::OutcomeUnknown`] when the statement was
/// sent and its answer lost ([`answer_lost`]), else as [`storage`] (an
/// error taking the connection sent nothing; an error reply wrote
/// nothing).
pub fn written<C: ErrorClass>(e: RunError, id: &TaskId) -> Error {
    if e.sent && answer_lost::<C>(&e.error) {
        return Error::outcome_unknown(id.clone(), e.error);
    }
    storage::<C>(e.error)
}

/// Whether a converted error is a lock conflict.
fn converted_is_lock_conflict<C: ErrorClass>(e: &Error) -> bool {
    match e {
        Error::Storage { source, .. } => {
            source.downcast_ref::<sqlx::Error>().is_some_and(C::is_lock_conflict)
        }
        _ => false,
    }
}

/// Runs `attempt` again when it fails with a lock conflict, up to
/// `retries` times with a short, growing pause: the server rolled the
/// statement back, so running it again is safe, and callers never see the
/// conflict unless it persists. Callers pass [`ErrorClass::LOCK_RETRIES`];
/// housekeeping passes 1 (it leaves the rest to its next tick, so a row a
/// foreign transaction holds costs it at most two lock waits).
///
/// # Errors
/// The last attempt's.
pub async fn retry_lock_conflicts<C, T, F, Fut>(retries: u32, mut attempt: F) -> Result<T, Error>
where
    C: ErrorClass,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(e) if tries < retries && converted_is_lock_conflict::<C>(&e) => {
                tries += 1;
                tracing::debug!(tries, error = %e, "lock conflict; running the statement again");
                tokio::time::sleep(pause(tries)).await;
            }
            other => return other,
        }
    }
}

/// 1, 2, 4, ... ms plus up to 1 ms taken from the clock's nanoseconds, so
/// two statements that collided do not collide again in lockstep.
fn pause(tries: u32) -> Duration {
    let spread = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() % 1_000_000)
        .unwrap_or(0);
    Duration::from_millis(1 << tries.min(6)) + Duration::from_nanos(u64::from(spread))
}

/// Writes, in a driver's error module, the conversions of this module bound
/// to the driver's [`ErrorClass`] `$class`, under the names the driver's
/// statements call: `storage`, `connect`, `written`, `answer_lost`,
/// `retry_lock_conflicts` (up to [`ErrorClass::LOCK_RETRIES`]) and
/// `retry_lock_conflicts_up_to`.
#[macro_export]
macro_rules! driver_errors {
    ($class:ty) => {
        /// Converts a driver error (`executor_sql::error::storage`).
        pub(crate) fn storage(e: sqlx::Error) -> executor_core::Error {
            $crate::error::storage::<$class>(e)
        }

        /// The error of a pool's first connection (`executor_sql::error::connect`).
        pub(crate) fn connect(e: sqlx::Error) -> executor_core::Error {
            $crate::error::connect::<$class>(e)
        }

        /// The error of a statement that writes a submit's task `id`
        /// (`executor_sql::error::written`).
        pub(crate) fn written(e: $crate::conn::RunError, id: &executor_core::TaskId) -> executor_core::Error {
            $crate::error::written::<$class>(e, id)
        }

        /// Whether a sent statement may have run with its answer lost
        /// (`executor_sql::error::answer_lost`).
        #[allow(dead_code)]
        pub(crate) fn answer_lost(e: &sqlx::Error) -> bool {
            $crate::error::answer_lost::<$class>(e)
        }

        /// Runs `attempt` again when it loses a lock conflict
        /// (`executor_sql::error::retry_lock_conflicts`).
        pub(crate) async fn retry_lock_conflicts<T, F, Fut>(attempt: F) -> executor_core::Result<T>
        where
            F: FnMut() -> Fut,
            Fut: std::future::Future<Output = executor_core::Result<T>>,
        {
            let retries = <$class as $crate::ErrorClass>::LOCK_RETRIES;
            $crate::error::retry_lock_conflicts::<$class, _, _, _>(retries, attempt).await
        }

        /// [`retry_lock_conflicts`] with another bound.
        pub(crate) async fn retry_lock_conflicts_up_to<T, F, Fut>(
            retries: u32,
            attempt: F,
        ) -> executor_core::Result<T>
        where
            F: FnMut() -> Fut,
            Fut: std::future::Future<Output = executor_core::Result<T>>,
        {
            $crate::error::retry_lock_conflicts::<$class, _, _, _>(retries, attempt).await
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dialect whose every server error is a lock conflict.
    struct Conflicts;

    impl ErrorClass for Conflicts {
        const SERVER: &'static str = "test";
        fn is_lock_conflict(e: &sqlx::Error) -> bool {
            matches!(e, sqlx::Error::Database(_))
        }
        fn is_transient(_: &sqlx::Error) -> bool {
            false
        }
        fn bad_value(_: &sqlx::Error) -> Option<String> {
            None
        }
        fn is_missing_schema(_: &sqlx::Error) -> bool {
            false
        }
        fn is_duplicate(_: &sqlx::Error) -> bool {
            false
        }
        fn tls_fix(_: TlsProblem) -> &'static str {
            "fix it"
        }
    }

    fn io() -> sqlx::Error {
        sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
    }

    #[test]
    fn only_a_sent_statement_that_lost_its_answer_is_unknown() -> Result<(), Error> {
        let id = TaskId::new("t1")?;
        let lost = written::<Conflicts>(RunError { error: io(), sent: true }, &id);
        assert_eq!(lost.outcome_unknown_id(), Some(&id), "{lost}");
        assert!(lost.is_retryable());
        let protocol = written::<Conflicts>(
            RunError { error: sqlx::Error::Protocol("out of step".into()), sent: true },
            &id,
        );
        assert_eq!(protocol.outcome_unknown_id(), Some(&id), "{protocol}");
        // Nothing sent: the same I/O error while connecting, a pool that
        // timed out.
        for error in [io(), sqlx::Error::PoolTimedOut] {
            let e = written::<Conflicts>(RunError { error, sent: false }, &id);
            assert!(e.outcome_unknown_id().is_none(), "{e}");
            assert!(e.is_retryable(), "{e}");
        }
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn other_errors_are_not_run_again() {
        let mut runs = 0;
        let out: Result<(), Error> = retry_lock_conflicts::<Conflicts, _, _, _>(8, || {
            runs += 1;
            async { Err(Error::storage(io(), true)) }
        })
        .await;
        assert!(out.is_err());
        assert_eq!(runs, 1);
    }
}
