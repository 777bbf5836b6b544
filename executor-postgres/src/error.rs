//! Turning sqlx errors into [`executor_core::Error`], and retrying the lock
//! conflicts that concurrent statements are expected to hit now and then.
//!
//! `retryable` is a promise to the caller that the same call may succeed
//! later: a lost connection, a full pool, a lock conflict, a server that is
//! shutting down, starting or failing over. Anything a retry cannot fix (a
//! value out of range, a refused constraint, a bad URL or password, a
//! missing table) is not retryable, so a retrying caller stops instead of
//! looping forever.

use std::{future::Future, time::Duration};

use executor_core::Error;

/// SQLSTATEs of a lock conflict the statement lost and may win next time:
/// serialization failure, deadlock, lock not available (`lock_timeout`,
/// `NOWAIT`).
const LOCK_CONFLICT: [&str; 3] = ["40001", "40P01", "55P03"];

/// How many times a statement that lost a lock conflict is run again
/// before the error reaches the caller.
const LOCK_RETRIES: u32 = 8;

/// The SQLSTATE of a server error.
pub(crate) fn code(e: &sqlx::Error) -> Option<String> {
    e.as_database_error().and_then(|d| d.code()).map(|c| c.into_owned())
}

/// Whether `e` is the server refusing because of a lock it could not take
/// (`NOWAIT`, `lock_timeout`).
pub(crate) fn is_lock_not_available(e: &sqlx::Error) -> bool {
    code(e).as_deref() == Some("55P03")
}

/// Whether the SQLSTATE means "try again": connection exceptions (08),
/// insufficient resources (53: too many connections, out of memory or
/// disk), operator intervention (57: shutdown, crash, the server starting,
/// a cancelled statement), a read-only transaction during a failover
/// (25006), system errors (58), and the lock conflicts above.
fn transient(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || code.starts_with("57")
        || code.starts_with("58")
        || code == "25006"
        || LOCK_CONFLICT.contains(&code)
}

/// The error of a pool's first connection: a TLS failure (a refused
/// certificate, a server without TLS under `sslmode=require`) says what to
/// check and is not retryable; anything else as [`storage`].
pub(crate) fn connect(e: sqlx::Error) -> Error {
    let tls = match &e {
        sqlx::Error::Tls(tls) => Some(tls.to_string()),
        sqlx::Error::Io(io)
            if io.kind() == std::io::ErrorKind::InvalidData && io.to_string().contains("certificate") =>
        {
            Some(io.to_string())
        }
        _ => None,
    };
    if let Some(tls) = tls {
        return Error::storage(
            format!(
                "TLS with PostgreSQL failed ({tls}): with sslmode=verify-ca or verify-full, give the CA \
                 that signed the server's certificate as `sslrootcert=<file>` in the URL (the system's \
                 CAs otherwise); verify-full also needs the URL's host in the certificate"
            ),
            false,
        );
    }
    storage(e)
}

/// Whether `e` is a unique violation (23505).
pub(crate) fn is_duplicate(e: &sqlx::Error) -> bool {
    code(e).as_deref() == Some("23505")
}

/// Whether `e` is a duplicate of the tasks' primary key (rather than the
/// debounce key's unique index).
pub(crate) fn is_duplicate_id(e: &sqlx::Error) -> bool {
    is_duplicate(e)
        && e.as_database_error().and_then(|d| d.constraint()).is_some_and(|c| c.ends_with("_pkey"))
}

/// Whether a converted error certainly did not commit: the server refused
/// the statement with an error reply. After a lost connection the outcome
/// is unknown.
pub(crate) fn certainly_not_applied(e: &Error) -> bool {
    match e {
        Error::Storage { source, .. } => {
            source.downcast_ref::<sqlx::Error>().is_some_and(|e| matches!(e, sqlx::Error::Database(_)))
        }
        Error::Invalid { .. } | Error::PayloadTooLarge { .. } => true,
        _ => false,
    }
}

fn is_retryable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(_) => code(e).is_some_and(|c| transient(&c)),
        _ => false,
    }
}

/// Converts a driver error, saying whether the same call may succeed again.
/// A value the columns cannot hold (a data exception, class 22: out of
/// range, too long, a NUL in text; a refused CHECK or NOT NULL) is
/// [`Error::Invalid`]: the caller's data (or a hand-edited row) is wrong,
/// not the store.
pub(crate) fn storage(e: sqlx::Error) -> Error {
    if let Some(c) = code(&e).filter(|c| c.starts_with("22") || c == "23514" || c == "23502") {
        let message = e.as_database_error().map(|d| d.message().to_owned()).unwrap_or_default();
        return Error::invalid("value", format!("the server refused it (SQLSTATE {c}): {message}"));
    }
    let retryable = is_retryable(&e);
    Error::storage(e, retryable)
}

/// Whether a converted error is a lock conflict.
fn converted_is_lock_conflict(e: &Error) -> bool {
    match e {
        Error::Storage { source, .. } => source
            .downcast_ref::<sqlx::Error>()
            .and_then(code)
            .is_some_and(|c| LOCK_CONFLICT.contains(&c.as_str())),
        _ => false,
    }
}

/// Runs `attempt` again when it fails with a lock conflict, up to
/// [`LOCK_RETRIES`] times with a short, growing pause: the server rolled
/// the statement back, so running it again is safe.
pub(crate) async fn retry_lock_conflicts<T, F, Fut>(attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    retry_lock_conflicts_up_to(LOCK_RETRIES, attempt).await
}

/// [`retry_lock_conflicts`] with another bound: housekeeping tries once
/// more and then leaves the rest to its next tick.
pub(crate) async fn retry_lock_conflicts_up_to<T, F, Fut>(retries: u32, mut attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(e) if tries < retries && converted_is_lock_conflict(&e) => {
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
