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

use executor_core::{
    Error, TaskId,
    tls::{TlsFailure, TlsProblem},
};

use crate::conn::RunError;

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

/// The error of a pool's first connection: a TLS failure ([`tls_failure`])
/// is not retryable and says what is wrong and which setting fixes it;
/// anything else as [`storage`].
pub(crate) fn connect(e: sqlx::Error) -> Error {
    match tls_failure(&e) {
        Some(problem) => TlsFailure::new("PostgreSQL", problem, fix(problem), e).into(),
        None => storage(e),
    }
}

/// What a TLS handshake with PostgreSQL refused, by the type of the error:
/// the rustls error in the handshake's I/O error or in a `sqlx::Error::Tls`;
/// a `sqlx::Error::Tls` without one (sqlx says then in a message of its own
/// that the server offers no TLS, or that a TLS file is unusable). `None`
/// for anything else. A plain connection that `pg_hba.conf` refuses because
/// it is not encrypted is SQLSTATE 28000 like every other `pg_hba.conf`
/// refusal, so it stays the server's error, which says "no encryption".
pub(crate) fn tls_failure(e: &sqlx::Error) -> Option<TlsProblem> {
    #[cfg(feature = "tls")]
    if let Some(problem) = executor_core::tls::find_rustls_error(e).and_then(TlsProblem::of) {
        return Some(problem);
    }
    match e {
        sqlx::Error::Tls(_) if cfg!(not(feature = "tls")) => Some(TlsProblem::NotBuilt),
        sqlx::Error::Tls(_) => Some(TlsProblem::NotStarted),
        _ => None,
    }
}

/// The setting of the URL or of the server that fixes `problem`.
fn fix(problem: TlsProblem) -> &'static str {
    match problem {
        TlsProblem::Expired | TlsProblem::NotYetValid => {
            "renew the certificate the server presents (its `ssl_cert_file`), or set this machine's clock \
             right"
        }
        TlsProblem::UnknownIssuer => {
            "give the CA that signed it as `sslrootcert=<file>` in the URL (the system's CAs otherwise)"
        }
        TlsProblem::WrongHost => {
            "connect with a host name the certificate lists, or use `sslmode=verify-ca`, which checks the \
             CA but not the name"
        }
        TlsProblem::BadSignature | TlsProblem::OtherCertificate => {
            "give the server a certificate (its `ssl_cert_file`) signed by the CA of `sslrootcert=<file>`"
        }
        TlsProblem::ClientCertRefused => {
            "present a certificate signed by the CA the server checks clients against (its \
             `ssl_ca_file`) as `sslcert=<file>&sslkey=<file>`"
        }
        TlsProblem::ClientCertMissing => "present one as `sslcert=<file>&sslkey=<file>` in the URL",
        TlsProblem::NoCommonProtocol => "allow TLS 1.2 or 1.3 on the server (its `ssl_min_protocol_version`)",
        TlsProblem::NotBuilt => {
            "turn executor-postgres's `tls` feature on (it is a default feature), or connect without TLS \
             (`sslmode=prefer` or `disable`)"
        }
        // `NotTls`, `NotStarted`, and any problem named later.
        _ => {
            "turn TLS on at the server (`ssl = on`, `ssl_cert_file`, `ssl_key_file`) or connect without it \
             (`sslmode=prefer` or `disable`); else check the files of `sslrootcert=`, `sslcert=` and \
             `sslkey=`"
        }
    }
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

/// Whether a statement that was sent may have run with its answer lost:
/// the connection failed (an I/O error: reset, EOF, a broken pipe, TLS
/// failing mid-stream), a reply came out of step with its request
/// (`Protocol`), or the driver's worker went away. An error reply (a
/// refused statement, a backend terminated mid-statement) means the
/// statement's transaction did not commit.
pub(crate) fn answer_lost(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed
    )
}

/// The error of a statement that writes a submit's task `id` (its INSERT,
/// a debounce's upsert): [`Error::OutcomeUnknown`] when the statement was
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
        assert!(text.contains("has expired") && text.contains("`ssl_cert_file`"), "{text}");

        let alert = rustls::Error::AlertReceived(AlertDescription::UnknownCA);
        assert_eq!(tls_failure(&sqlx::Error::Tls(alert.into())), Some(TlsProblem::ClientCertRefused));
        assert!(connect(sqlx::Error::Io(io::Error::from(io::ErrorKind::ConnectionReset))).is_retryable());

        // sqlx's own refusal, without a rustls error in it.
        let no_tls = connect(sqlx::Error::Tls("server does not support TLS".into())).to_string();
        assert!(
            no_tls.contains("TLS with PostgreSQL failed") && no_tls.contains("offers no TLS"),
            "{no_tls}"
        );
        assert!(no_tls.contains("sslmode=prefer"), "{no_tls}");
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
