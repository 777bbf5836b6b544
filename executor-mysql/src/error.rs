//! Turning sqlx errors into [`executor_core::Error`], and retrying the lock
//! conflicts that concurrent transactions are expected to hit now and then.

use std::{future::Future, time::Duration};

use executor_core::Error;
use sqlx::mysql::MySqlDatabaseError;

/// `ER_LOCK_DEADLOCK`: InnoDB rolled the transaction back.
const DEADLOCK: u16 = 1213;
/// `ER_LOCK_WAIT_TIMEOUT`.
const LOCK_WAIT_TIMEOUT: u16 = 1205;
/// Server errors that mean "try again": the connection or the server went
/// away, or the statement was interrupted (KILL, shutdown, too many connections).
const TRANSIENT: [u16; 7] = [1040, 1053, 1317, 1927, 2006, 2013, 1792];

/// How many times a transaction that lost a lock conflict is run again
/// before the error reaches the caller.
const LOCK_RETRIES: u32 = 8;

/// The MySQL error number of a server error.
pub(crate) fn mysql_number(e: &sqlx::Error) -> Option<u16> {
    e.as_database_error().and_then(|d| d.try_downcast_ref::<MySqlDatabaseError>()).map(|d| d.number())
}

/// Whether `e` is a duplicate key (1062).
pub(crate) fn is_duplicate(e: &sqlx::Error) -> bool {
    mysql_number(e) == Some(1062)
}

fn is_lock_conflict(e: &sqlx::Error) -> bool {
    matches!(mysql_number(e), Some(DEADLOCK | LOCK_WAIT_TIMEOUT))
}

fn is_retryable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(_) => {
            mysql_number(e).is_some_and(|n| n == DEADLOCK || n == LOCK_WAIT_TIMEOUT || TRANSIENT.contains(&n))
        }
        _ => false,
    }
}

/// Converts a driver error, saying whether the same call may succeed again.
pub(crate) fn storage(e: sqlx::Error) -> Error {
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
/// up to [`LOCK_RETRIES`] times with a short, growing pause: InnoDB has
/// rolled the whole transaction back, so running it again is safe, and
/// callers never see the conflict unless it persists.
pub(crate) async fn retry_lock_conflicts<T, F, Fut>(mut attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(e) if tries < LOCK_RETRIES && converted_is_lock_conflict(&e) => {
                tries += 1;
                tracing::debug!(tries, error = %e, "lock conflict; running the transaction again");
                tokio::time::sleep(pause(tries)).await;
            }
            other => return other,
        }
    }
}

/// 1, 2, 4, ... ms plus up to 1 ms taken from the clock's nanoseconds, so
/// two transactions that collided do not collide again in lockstep.
fn pause(tries: u32) -> Duration {
    let spread = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() % 1_000_000)
        .unwrap_or(0);
    Duration::from_millis(1 << tries.min(6)) + Duration::from_nanos(u64::from(spread))
}
