//! Which MySQL errors mean what ([`Class`]: told by the server's error
//! number), and the SQL core's conversion of sqlx errors into
//! [`executor_core::Error`] and retry of lock conflicts over those classes
//! (`executor_sql::error`).

use executor_core::tls::TlsProblem;
use executor_sql::ErrorClass;
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
/// `ER_SECURE_TRANSPORT_REQUIRED` (MySQL): the server takes only TLS
/// connections (`require_secure_transport=ON`).
const SECURE_TRANSPORT_REQUIRED: u16 = 3159;

/// Which server errors mean what, by error number.
impl ErrorClass for crate::MySqlDialect {
    const SERVER: &'static str = "MySQL";

    /// A duplicate key: 1062.
    fn is_duplicate(e: &sqlx::Error) -> bool {
        mysql_number(e) == Some(1062)
    }

    fn is_lock_conflict(e: &sqlx::Error) -> bool {
        matches!(mysql_number(e), Some(DEADLOCK | LOCK_WAIT_TIMEOUT))
    }

    fn is_transient(e: &sqlx::Error) -> bool {
        mysql_number(e).is_some_and(|n| TRANSIENT.contains(&n))
    }

    fn bad_value(e: &sqlx::Error) -> Option<String> {
        mysql_number(e).filter(|n| BAD_VALUE.contains(n)).map(|n| format!("error {n}"))
    }

    /// Error 2013 (lost connection during the query): what a proxy between
    /// this process and the server answers when it lost the server
    /// mid-statement.
    fn lost_mid_statement(e: &sqlx::Error) -> bool {
        mysql_number(e) == Some(2013)
    }

    fn tls_refusal(e: &sqlx::Error) -> Option<TlsProblem> {
        (mysql_number(e) == Some(SECURE_TRANSPORT_REQUIRED)).then_some(TlsProblem::TlsOnly)
    }

    /// Unknown table (1146) or column (1054).
    fn is_missing_schema(e: &sqlx::Error) -> bool {
        matches!(mysql_number(e), Some(1146 | 1054))
    }

    fn tls_fix(problem: TlsProblem) -> &'static str {
        fix(problem)
    }
}

/// The MySQL error number of a server error.
pub(crate) fn mysql_number(e: &sqlx::Error) -> Option<u16> {
    e.as_database_error().and_then(|d| d.try_downcast_ref::<MySqlDatabaseError>()).map(|d| d.number())
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

/// Whether `e` is a duplicate of the primary key (rather than another
/// unique key). MySQL and MariaDB both name the primary key `PRIMARY` in
/// the message (`... for key 'PRIMARY'`, MySQL 8: `'tbl.PRIMARY'`); the
/// error packet has no field for the key, so the message is the only signal.
pub(crate) fn is_duplicate_id(e: &sqlx::Error) -> bool {
    crate::MySqlDialect::is_duplicate(e)
        && e.as_database_error().is_some_and(|d| d.message().contains("PRIMARY"))
}

executor_sql::driver_errors!(crate::MySqlDialect);

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
            executor_sql::error::tls_failure::<crate::MySqlDialect>(&handshake),
            Some(TlsProblem::Expired)
        );
        let e = connect(handshake);
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(text.contains("has expired") && text.contains("`ssl_cert`"), "{text}");

        let alert = rustls::Error::AlertReceived(AlertDescription::UnknownCA);
        assert_eq!(
            executor_sql::error::tls_failure::<crate::MySqlDialect>(&sqlx::Error::Tls(alert.into())),
            Some(TlsProblem::ClientCertRefused)
        );
        assert!(connect(sqlx::Error::Io(io::Error::from(io::ErrorKind::ConnectionReset))).is_retryable());

        // sqlx's own refusal, without a rustls error in it.
        let no_tls = connect(sqlx::Error::Tls("server does not support TLS".into())).to_string();
        assert!(no_tls.contains("TLS with MySQL failed") && no_tls.contains("offers no TLS"), "{no_tls}");
        assert!(no_tls.contains("ssl-mode=PREFERRED"), "{no_tls}");
    }
}
