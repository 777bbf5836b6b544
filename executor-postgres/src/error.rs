//! Which PostgreSQL errors mean what ([`Class`]: told by the SQLSTATE), and
//! the SQL core's conversion of sqlx errors into [`executor_core::Error`]
//! and retry of lock conflicts over those classes (`executor_sql::error`).

use executor_core::{Error, tls::TlsProblem};
use executor_sql::ErrorClass;

/// SQLSTATEs of a lock conflict the statement lost and may win next time:
/// serialization failure, deadlock, lock not available (`lock_timeout`,
/// `NOWAIT`).
const LOCK_CONFLICT: [&str; 3] = ["40001", "40P01", "55P03"];

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

/// Whether `e` is a duplicate of the tasks' primary key (rather than the
/// debounce key's unique index).
pub(crate) fn is_duplicate_id(e: &sqlx::Error) -> bool {
    crate::PostgresDialect::is_duplicate(e)
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

/// Which server errors mean what, by SQLSTATE.
impl ErrorClass for crate::PostgresDialect {
    const SERVER: &'static str = "PostgreSQL";

    /// A duplicate key: SQLSTATE 23505.
    fn is_duplicate(e: &sqlx::Error) -> bool {
        code(e).as_deref() == Some("23505")
    }

    fn is_lock_conflict(e: &sqlx::Error) -> bool {
        code(e).is_some_and(|c| LOCK_CONFLICT.contains(&c.as_str()))
    }

    fn is_transient(e: &sqlx::Error) -> bool {
        code(e).is_some_and(|c| transient(&c))
    }

    /// A data exception (class 22: out of range, too long, a NUL in text),
    /// a refused CHECK (23514) or NOT NULL (23502).
    fn bad_value(e: &sqlx::Error) -> Option<String> {
        code(e)
            .filter(|c| c.starts_with("22") || c == "23514" || c == "23502")
            .map(|c| format!("SQLSTATE {c}"))
    }

    /// Undefined table (42P01) or column (42703).
    fn is_missing_schema(e: &sqlx::Error) -> bool {
        matches!(code(e).as_deref(), Some("42P01" | "42703"))
    }

    fn tls_fix(problem: TlsProblem) -> &'static str {
        fix(problem)
    }
}

executor_sql::driver_errors!(crate::PostgresDialect);

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
        assert_eq!(
            executor_sql::error::tls_failure::<crate::PostgresDialect>(&handshake),
            Some(TlsProblem::Expired)
        );
        let e = connect(handshake);
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(text.contains("has expired") && text.contains("`ssl_cert_file`"), "{text}");

        let alert = rustls::Error::AlertReceived(AlertDescription::UnknownCA);
        assert_eq!(
            executor_sql::error::tls_failure::<crate::PostgresDialect>(&sqlx::Error::Tls(alert.into())),
            Some(TlsProblem::ClientCertRefused)
        );
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
