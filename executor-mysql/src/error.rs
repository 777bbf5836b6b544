//! Turning sqlx errors into [`executor_core::Error`], and retrying the lock
//! conflicts that concurrent statements are expected to hit now and then.
//!
//! `retryable` is a promise to the caller that the same call may succeed
//! later: a lost connection, a full pool, a lock conflict, a server that is
//! shutting down or failing over. Anything a retry cannot fix (a value out
//! of range, a refused constraint, a bad URL or password, a missing table)
//! is not retryable, so a retrying caller stops instead of looping forever.

use std::{future::Future, time::Duration};

use executor_core::Error;
use sqlx::mysql::MySqlDatabaseError;

/// `ER_LOCK_DEADLOCK`: InnoDB rolled the transaction back.
const DEADLOCK: u16 = 1213;
/// `ER_LOCK_WAIT_TIMEOUT`: the statement was rolled back.
const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// Server errors that mean "try again": too many connections (1040, 1203),
/// shutdown (1053), network read/write errors (1158-1161), the statement or
/// connection was killed or interrupted (1317, 1927), a read-only server or
/// transaction during a failover (1290, 1792, 1836), an execution time
/// limit (1969 MariaDB, 3024 MySQL), the server gone (2006, 2013), a
/// connection closed for inactivity (4031 MySQL).
const TRANSIENT: [u16; 17] =
    [1040, 1053, 1158, 1159, 1160, 1161, 1203, 1290, 1317, 1792, 1836, 1927, 1969, 2006, 2013, 3024, 4031];
/// Values a column cannot hold: out of range (1264, 1690), too long (1406),
/// incorrect (1366, 1292), a CHECK constraint (3819 MySQL, 4025 MariaDB).
/// The entry points validate against the shared ranges, so one of these
/// means a bug or a hand-edited row; either way retrying cannot help.
const BAD_VALUE: [u16; 7] = [1264, 1292, 1366, 1406, 1690, 3819, 4025];

/// How many times a statement that lost a lock conflict is run again
/// before the error reaches the caller.
const LOCK_RETRIES: u32 = 8;

/// The MySQL error number of a server error.
pub(crate) fn mysql_number(e: &sqlx::Error) -> Option<u16> {
    e.as_database_error().and_then(|d| d.try_downcast_ref::<MySqlDatabaseError>()).map(|d| d.number())
}

/// The error of a pool's first connection: a TLS failure (a refused
/// certificate, a server without TLS under `ssl-mode=REQUIRED`) says what to
/// check and is not retryable; anything else as [`storage`].
pub(crate) fn connect(e: sqlx::Error) -> Error {
    // A refused certificate ends the handshake as an I/O error with rustls'
    // words in it ("invalid peer certificate: UnknownIssuer").
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
                "TLS with MySQL failed ({tls}): with ssl-mode=VERIFY_CA or VERIFY_IDENTITY, give the \
                 CA that signed the server's certificate as `ssl-ca=<file>` in the URL (the system's \
                 CAs otherwise); VERIFY_IDENTITY also needs the URL's host in the certificate"
            ),
            false,
        );
    }
    storage(e)
}

/// Whether `e` is a duplicate key (1062).
pub(crate) fn is_duplicate(e: &sqlx::Error) -> bool {
    mysql_number(e) == Some(1062)
}

/// Whether `e` is a duplicate of the primary key (rather than another
/// unique key). MySQL and MariaDB both name the primary key `PRIMARY` in
/// the message (`... for key 'PRIMARY'`, MySQL 8: `'tbl.PRIMARY'`).
pub(crate) fn is_duplicate_id(e: &sqlx::Error) -> bool {
    is_duplicate(e) && e.as_database_error().is_some_and(|d| d.message().contains("PRIMARY"))
}

fn is_lock_conflict(e: &sqlx::Error) -> bool {
    matches!(mysql_number(e), Some(DEADLOCK | LOCK_WAIT_TIMEOUT))
}

/// Whether the statement certainly did not commit: the server refused it
/// with an error reply. After a lost connection the outcome is unknown.
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
        // A reply out of step with its request: the connection is closed
        // (see conn.rs) and the next call runs on a fresh one.
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(_) => {
            mysql_number(e).is_some_and(|n| n == DEADLOCK || n == LOCK_WAIT_TIMEOUT || TRANSIENT.contains(&n))
        }
        // A bad certificate or TLS setting does not heal; a bad URL, a
        // missing column, a value that does not decode neither.
        _ => false,
    }
}

/// Converts a driver error, saying whether the same call may succeed again.
/// A value the columns cannot hold is [`Error::Invalid`]: the caller's data
/// (or a hand-edited row) is wrong, not the store.
pub(crate) fn storage(e: sqlx::Error) -> Error {
    if let Some(n) = mysql_number(&e).filter(|n| BAD_VALUE.contains(n)) {
        let message = e.as_database_error().map(|d| d.message().to_owned()).unwrap_or_default();
        return Error::invalid("value", format!("the server refused it (error {n}): {message}"));
    }
    let retryable = is_retryable(&e);
    Error::storage(e, retryable)
}

/// Whether a converted error is a deadlock or lock-wait timeout.
fn converted_is_lock_conflict(e: &Error) -> bool {
    match e {
        Error::Storage { source, .. } => source.downcast_ref::<sqlx::Error>().is_some_and(is_lock_conflict),
        _ => false,
    }
}

/// Runs `attempt` again when it fails with a deadlock or lock-wait timeout,
/// up to [`LOCK_RETRIES`] times with a short, growing pause: InnoDB rolled
/// the statement back, so running it again is safe, and callers never see
/// the conflict unless it persists.
pub(crate) async fn retry_lock_conflicts<T, F, Fut>(attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    retry_lock_conflicts_up_to(LOCK_RETRIES, attempt).await
}

/// [`retry_lock_conflicts`] with another bound: housekeeping tries once
/// more and then leaves the rest to its next tick, so a row a foreign
/// transaction holds costs it at most two lock waits.
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
