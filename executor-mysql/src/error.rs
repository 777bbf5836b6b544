//! Turning sqlx errors into [`executor_core::Error`], and retrying the lock
//! conflicts that concurrent statements are expected to hit now and then.
//!
//! `retryable` is a promise to the caller that the same call may succeed
//! later: a lost connection, a full pool, a lock conflict, a server that is
//! shutting down or failing over. Anything a retry cannot fix (a value out
//! of range, a refused constraint, a bad URL or password, a missing table)
//! is not retryable, so a retrying caller stops instead of looping forever.

use std::{future::Future, time::Duration};

use executor_core::{
    Error, TaskId,
    tls::{TlsFailure, TlsProblem},
};
use sqlx::mysql::MySqlDatabaseError;

use crate::conn::RunError;

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

/// The error of a pool's first connection: a TLS failure ([`tls_failure`])
/// is not retryable and says what is wrong and which setting fixes it;
/// anything else as [`storage`].
pub(crate) fn connect(e: sqlx::Error) -> Error {
    match tls_failure(&e) {
        Some(problem) => TlsFailure::new("MySQL", problem, fix(problem), e).into(),
        None => storage(e),
    }
}

/// `ER_SECURE_TRANSPORT_REQUIRED` (MySQL): the server takes only TLS
/// connections (`require_secure_transport=ON`).
const SECURE_TRANSPORT_REQUIRED: u16 = 3159;

/// What a TLS handshake with MySQL refused, by the type of the error: the
/// rustls error in the handshake's I/O error or in a `sqlx::Error::Tls`; a
/// `sqlx::Error::Tls` without one (sqlx says then in a message of its own
/// that the server offers no TLS, or that a TLS file is unusable); the
/// server's refusal of a plain connection. `None` for anything else.
pub(crate) fn tls_failure(e: &sqlx::Error) -> Option<TlsProblem> {
    #[cfg(feature = "tls")]
    if let Some(problem) = executor_core::tls::find_rustls_error(e).and_then(TlsProblem::of) {
        return Some(problem);
    }
    match e {
        sqlx::Error::Tls(_) if cfg!(not(feature = "tls")) => Some(TlsProblem::NotBuilt),
        sqlx::Error::Tls(_) => Some(TlsProblem::NotStarted),
        _ if mysql_number(e) == Some(SECURE_TRANSPORT_REQUIRED) => Some(TlsProblem::TlsOnly),
        _ => None,
    }
}

/// The setting of the URL or of the server that fixes `problem`.
fn fix(problem: TlsProblem) -> &'static str {
    match problem {
        TlsProblem::Expired | TlsProblem::NotYetValid => {
            "renew the certificate the server presents (its `ssl_cert`), or set this machine's clock right"
        }
        TlsProblem::UnknownIssuer => {
            "give the CA that signed it as `ssl-ca=<file>` in the URL (the system's CAs otherwise)"
        }
        TlsProblem::WrongHost => {
            "connect with a host name the certificate lists, or use `ssl-mode=VERIFY_CA`, which checks \
             the CA but not the name"
        }
        TlsProblem::BadSignature | TlsProblem::OtherCertificate => {
            "give the server a certificate (its `ssl_cert`) signed by the CA of `ssl-ca=<file>`"
        }
        TlsProblem::ClientCertRefused => {
            "present a certificate signed by the CA the server checks clients against (its `ssl_ca`) \
             as `ssl-cert=<file>&ssl-key=<file>`"
        }
        TlsProblem::ClientCertMissing => "present one as `ssl-cert=<file>&ssl-key=<file>` in the URL",
        TlsProblem::NoCommonProtocol => "allow TLS 1.2 or 1.3 on the server (its `tls_version`)",
        TlsProblem::TlsOnly => "set `ssl-mode=VERIFY_IDENTITY` (or `VERIFY_CA`, `REQUIRED`) in the URL",
        TlsProblem::NotBuilt => {
            "turn executor-mysql's `tls` feature on (it is a default feature), or connect without TLS \
             (`ssl-mode=PREFERRED` or `DISABLED`)"
        }
        // `NotTls`, `NotStarted`, and any problem named later.
        _ => {
            "turn TLS on at the server (`ssl_cert`, `ssl_key`) or connect without it \
             (`ssl-mode=PREFERRED` or `DISABLED`); else check the files of `ssl-ca=`, `ssl-cert=` and \
             `ssl-key=`"
        }
    }
}

/// Whether `e` is a duplicate key (1062).
pub(crate) fn is_duplicate(e: &sqlx::Error) -> bool {
    mysql_number(e) == Some(1062)
}

/// Whether `e` is a duplicate of the primary key (rather than another
/// unique key). MySQL and MariaDB both name the primary key `PRIMARY` in
/// the message (`... for key 'PRIMARY'`, MySQL 8: `'tbl.PRIMARY'`); the
/// error packet has no field for the key, so the message is the only signal.
pub(crate) fn is_duplicate_id(e: &sqlx::Error) -> bool {
    is_duplicate(e) && e.as_database_error().is_some_and(|d| d.message().contains("PRIMARY"))
}

fn is_lock_conflict(e: &sqlx::Error) -> bool {
    matches!(mysql_number(e), Some(DEADLOCK | LOCK_WAIT_TIMEOUT))
}

/// Whether a statement that was sent may have run with its answer lost:
/// the connection failed (an I/O error: reset, EOF, a broken pipe, TLS
/// failing mid-stream), a reply came out of step with its request
/// (`Protocol`), the driver's worker went away, or the reply is error 2013
/// (lost connection during the query: what a proxy between this process
/// and the server answers when it lost the server mid-statement). Any
/// other error reply is the server refusing the statement, which InnoDB
/// rolled back.
pub(crate) fn answer_lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed => {
            true
        }
        sqlx::Error::Database(_) => mysql_number(e) == Some(2013),
        _ => false,
    }
}

/// The error of a statement that writes a submit's task `id` (its INSERT,
/// a debounce's UPDATE): [`Error::OutcomeUnknown`] when the statement was
/// sent and its answer lost ([`answer_lost`]), else as [`storage`] (an
/// error taking the connection sent nothing; an error reply wrote
/// nothing).
pub(crate) fn written(e: RunError, id: &TaskId) -> Error {
    if e.sent && answer_lost(&e.error) {
        return Error::outcome_unknown(id.clone(), e.error);
    }
    storage(e.error)
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

#[cfg(all(test, feature = "tls"))]
mod tls_tests {
    use std::io;

    use rustls::{AlertDescription, CertificateError};

    use super::*;

    /// How deep in an error rustls' error may sit is `executor_core::tls`'s
    /// test; these are the places sqlx puts it, and this driver's words.
    #[test]
    fn tls_failures_are_told_by_type() {
        let expired = rustls::Error::InvalidCertificate(CertificateError::Expired);
        let handshake = sqlx::Error::Io(io::Error::new(io::ErrorKind::InvalidData, expired));
        assert_eq!(tls_failure(&handshake), Some(TlsProblem::Expired));
        let e = connect(handshake);
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(text.contains("has expired") && text.contains("`ssl_cert`"), "{text}");

        let alert = rustls::Error::AlertReceived(AlertDescription::UnknownCA);
        assert_eq!(tls_failure(&sqlx::Error::Tls(alert.into())), Some(TlsProblem::ClientCertRefused));
        assert!(connect(sqlx::Error::Io(io::Error::from(io::ErrorKind::ConnectionReset))).is_retryable());

        // sqlx's own refusal, without a rustls error in it.
        let no_tls = connect(sqlx::Error::Tls("server does not support TLS".into())).to_string();
        assert!(no_tls.contains("TLS with MySQL failed") && no_tls.contains("offers no TLS"), "{no_tls}");
        assert!(no_tls.contains("ssl-mode=PREFERRED"), "{no_tls}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> sqlx::Error {
        sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
    }

    #[test]
    fn only_a_sent_statement_that_lost_its_answer_is_unknown() -> Result<(), Error> {
        let id = TaskId::new("t1")?;
        let lost = written(RunError { error: io(), sent: true }, &id);
        assert_eq!(lost.outcome_unknown_id(), Some(&id), "{lost}");
        assert!(lost.is_retryable());
        let protocol =
            written(RunError { error: sqlx::Error::Protocol("out of step".into()), sent: true }, &id);
        assert_eq!(protocol.outcome_unknown_id(), Some(&id), "{protocol}");
        // Nothing sent: the same I/O error while connecting, a pool that
        // timed out.
        for error in [io(), sqlx::Error::PoolTimedOut] {
            let e = written(RunError { error, sent: false }, &id);
            assert!(e.outcome_unknown_id().is_none(), "{e}");
            assert!(e.is_retryable(), "{e}");
        }
        Ok(())
    }
}
