//! Converting fred errors into [`executor_core::Error::Storage`], retryable
//! only when the same call may succeed later.

use std::fmt;

use executor_core::{Error, TaskId};
use fred::error::{Error as RedisError, ErrorKind};

/// Replies after which the same call may succeed: the server is loading,
/// busy with a script, failing over, short of memory, or the cluster is
/// resharding. Matched against the reply's first word only (`BUSYKEY` is
/// not `BUSY`): fred gives these replies the kind `Unknown` and keeps them
/// only as text, so that word is the only signal there is.
const RETRYABLE_REPLIES: &[&str] =
    &["LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "MOVED", "ASK", "OOM"];

/// Whether a retry of the same call may succeed: connection, timeout and
/// cluster routing trouble may pass, and so may the replies above. A wrong
/// key type (`WRONGTYPE`), a script error, a bad argument, an unknown
/// command or an authentication failure will not: the call would fail the
/// same way again.
fn retryable(e: &RedisError) -> bool {
    match e.kind() {
        ErrorKind::IO | ErrorKind::Timeout | ErrorKind::Canceled | ErrorKind::Backpressure => true,
        ErrorKind::Cluster | ErrorKind::Routing => true,
        ErrorKind::Unknown => {
            let word = e.details().split_whitespace().next().unwrap_or("");
            RETRYABLE_REPLIES.contains(&word)
        }
        _ => false,
    }
}

/// A command that got no answer within the command timeout: kept as a
/// type of its own (not text), so [`sent`] can tell it from other errors.
#[derive(Debug)]
struct TimedOut(RedisError);

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redis did not answer within the command timeout (is it down or overloaded?): {}", self.0)
    }
}

impl std::error::Error for TimedOut {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Wraps a fred error and says whether a retry may help.
pub(crate) fn storage(e: RedisError) -> Error {
    if *e.kind() == ErrorKind::Timeout {
        return Error::storage(TimedOut(e), true);
    }
    let retryable = retryable(&e);
    Error::storage(e, retryable)
}

/// The error of a submit's command (a script call, the inbox's `RPUSH`)
/// once it was handed to fred, for task `id`: [`Error::OutcomeUnknown`]
/// when the command may have run and its answer was lost, else `e` as it
/// is. fred does not say whether a command reached the socket, so every
/// error of a command that may have: the connection broke (`IO`, `Canceled`:
/// the storage's commands fail fast, so fred answers a command in flight on
/// a dropped connection at once instead of resending it), a reply that did
/// not parse (`Protocol`), or no answer within the command timeout. An
/// error reply (a script error, `WRONGTYPE`, `BUSY`, `MOVED`) is an answer,
/// and an error raised before the command was queued (not connected:
/// [`crate::RedisStorage::client`]; backpressure; routing) sent nothing.
pub(crate) fn sent(e: Error, id: &TaskId) -> Error {
    match e {
        Error::Storage { source, .. } if answer_lost_in(source.as_ref()) => {
            Error::outcome_unknown(id.clone(), source)
        }
        other => other,
    }
}

/// Whether `e`, the error of a command handed to fred, may have lost the
/// answer of a command that ran (see [`sent`]).
pub(crate) fn answer_lost(e: &Error) -> bool {
    matches!(e, Error::Storage { source, .. } if answer_lost_in(source.as_ref()))
}

fn answer_lost_in(source: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    source.downcast_ref::<TimedOut>().is_some()
        || source
            .downcast_ref::<RedisError>()
            .is_some_and(|e| matches!(e.kind(), ErrorKind::IO | ErrorKind::Canceled | ErrorKind::Protocol))
}

/// A reply that does not have the shape a script returns.
pub(crate) fn shape(what: &str) -> Error {
    Error::storage(format!("unexpected reply from Redis: {what}"), false)
}

/// What a TLS handshake with Redis refused, told by the type of rustls'
/// error. Each is a setting of the client or of the server, so a retry
/// meets the same refusal.
#[cfg(feature = "tls")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TlsProblem {
    Expired,
    NotYetValid,
    UnknownIssuer,
    WrongHost,
    BadSignature,
    OtherCertificate,
    ClientCertRefused,
    ClientCertMissing,
    NoCommonProtocol,
    /// A `rediss://` URL for a port that answers in plain text.
    NotTls,
    /// A `redis://` URL for a port that speaks only TLS.
    TlsOnly,
}

#[cfg(feature = "tls")]
impl TlsProblem {
    /// The problem `e` reports; `None` for an error that says nothing about
    /// the certificates or the protocol (an I/O error wrapped by rustls).
    pub(crate) fn of(e: &rustls::Error) -> Option<Self> {
        use rustls::{AlertDescription as Alert, CertificateError as Cert, Error as Tls};
        Some(match e {
            Tls::InvalidCertificate(Cert::Expired | Cert::ExpiredContext { .. }) => Self::Expired,
            Tls::InvalidCertificate(Cert::NotValidYet | Cert::NotValidYetContext { .. }) => Self::NotYetValid,
            Tls::InvalidCertificate(Cert::UnknownIssuer) => Self::UnknownIssuer,
            Tls::InvalidCertificate(Cert::NotValidForName | Cert::NotValidForNameContext { .. }) => {
                Self::WrongHost
            }
            Tls::InvalidCertificate(Cert::BadSignature) => Self::BadSignature,
            Tls::InvalidCertificate(_) | Tls::NoCertificatesPresented => Self::OtherCertificate,
            Tls::AlertReceived(
                Alert::BadCertificate
                | Alert::UnsupportedCertificate
                | Alert::CertificateRevoked
                | Alert::CertificateExpired
                | Alert::CertificateUnknown
                | Alert::UnknownCA,
            ) => Self::ClientCertRefused,
            Tls::AlertReceived(Alert::CertificateRequired | Alert::NoCertificate) => Self::ClientCertMissing,
            Tls::AlertReceived(
                Alert::HandshakeFailure | Alert::ProtocolVersion | Alert::InsufficientSecurity,
            )
            | Tls::PeerIncompatible(_) => Self::NoCommonProtocol,
            // Plain text read as TLS records: a content type or length no
            // TLS peer sends.
            Tls::InvalidMessage(_) | Tls::InappropriateMessage { .. } | Tls::PeerSentOversizedRecord => {
                Self::NotTls
            }
            _ => return None,
        })
    }

    /// What is wrong, in words.
    fn words(self) -> &'static str {
        match self {
            Self::Expired => "the server's certificate has expired",
            Self::NotYetValid => "the server's certificate is not valid yet",
            Self::UnknownIssuer => {
                "the server's certificate is signed by a CA this client does not trust (unknown issuer)"
            }
            Self::WrongHost => "the server's certificate is not for this host name",
            Self::BadSignature => "the server's certificate has a bad signature",
            Self::OtherCertificate => "the server's certificate is not acceptable",
            Self::ClientCertRefused => "the server refused this client's certificate",
            Self::ClientCertMissing => "the server requires a client certificate and none was presented",
            Self::NoCommonProtocol => "the server and this client share no TLS version or cipher suite",
            Self::NotTls => "the server does not speak TLS on this port",
            Self::TlsOnly => "the server speaks only TLS on this port",
        }
    }

    /// The setting that fixes it.
    fn fix(self) -> &'static str {
        match self {
            Self::Expired | Self::NotYetValid => {
                "renew the certificate Redis presents (its `tls-cert-file`), or set this machine's clock right"
            }
            Self::UnknownIssuer => {
                "trust the CA that signed it with RedisStorageBuilder::tls_ca_file (the system's CA \
                 certificates otherwise)"
            }
            Self::WrongHost => {
                "connect with a host name or IP address the certificate lists, or give Redis a \
                 certificate for this one (its `tls-cert-file`)"
            }
            Self::BadSignature | Self::OtherCertificate => {
                "give Redis a server certificate (its `tls-cert-file`) signed by a CA this client trusts \
                 (RedisStorageBuilder::tls_ca_file)"
            }
            Self::ClientCertRefused => {
                "present a certificate signed by the CA Redis checks clients against (its \
                 `tls-ca-cert-file`) with RedisStorageBuilder::tls_client_cert"
            }
            Self::ClientCertMissing => {
                "Redis has `tls-auth-clients yes`: present a certificate with \
                 RedisStorageBuilder::tls_client_cert"
            }
            Self::NoCommonProtocol => {
                "allow TLS 1.2 or 1.3 on Redis (its `tls-protocols` and `tls-ciphersuites`)"
            }
            Self::NotTls => "use a `redis://` URL for a plain port, or the port of Redis's `tls-port`",
            Self::TlsOnly => "use a `rediss://` URL (`rediss-cluster://` for a cluster)",
        }
    }
}

/// A first connection refused for a [`TlsProblem`]: says what is wrong and
/// which setting fixes it, with the error that told (rustls', or fred's for
/// [`TlsProblem::TlsOnly`]) as its source.
#[cfg(feature = "tls")]
#[derive(Debug, thiserror::Error)]
#[error("TLS with Redis at {server} failed: {} ({source}): {}", .problem.words(), .problem.fix())]
pub(crate) struct TlsFailure {
    pub(crate) problem: TlsProblem,
    pub(crate) server: String,
    #[source]
    pub(crate) source: Box<dyn std::error::Error + Send + Sync>,
}

#[cfg(feature = "tls")]
impl From<TlsFailure> for Error {
    /// Never retryable: the same certificates meet the same refusal.
    fn from(failure: TlsFailure) -> Self {
        Error::storage(failure, false)
    }
}

/// The first rustls error in `e`'s `source()` chain. An `io::Error`'s
/// `source()` skips the error it wraps (its `Display` already shows it), so
/// that one is looked at through `get_ref()`.
#[cfg(feature = "tls")]
pub(crate) fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(tls) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|inner| rustls_error(inner))
        {
            return Some(tls);
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(details: &'static str) -> RedisError {
        // As fred classifies a server's error reply (`pretty_error`).
        let kind = match details.split_whitespace().next().unwrap_or("") {
            "WRONGTYPE" => ErrorKind::InvalidArgument,
            "NOAUTH" | "WRONGPASS" => ErrorKind::Auth,
            "MOVED" | "ASK" | "CLUSTERDOWN" => ErrorKind::Cluster,
            _ => ErrorKind::Unknown,
        };
        RedisError::new(kind, details)
    }

    #[test]
    fn only_errors_a_retry_can_fix_are_retryable() {
        for details in [
            "LOADING Redis is loading the dataset in memory",
            "BUSY Redis is busy running a script",
            "TRYAGAIN Multiple keys request during rehashing of slot",
            "CLUSTERDOWN The cluster is down",
            "MASTERDOWN Link with MASTER is down",
            "READONLY You can't write against a read only replica.",
            "MOVED 3999 127.0.0.1:6381",
            "OOM command not allowed when used memory > 'maxmemory'.",
        ] {
            assert!(storage(reply(details)).is_retryable(), "{details}");
        }
        for details in [
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            "WRONGTYPE {re:ns}:due holds a string, not a zset (edited by hand?)",
            "ERR Error running script (call to f_1): @user_script:12: attempt to compare nil with number",
            "ERR user_script:1: too many results to unpack script: 8a15, on @user_script:1.",
            "ERR value is not an integer or out of range",
            "ERR unknown command 'FOO'",
            "BUSYKEY Target key name already exists.",
            "NOSCRIPT No matching script.",
            "NOAUTH Authentication required.",
            "WRONGPASS invalid username-password pair",
        ] {
            assert!(!storage(reply(details)).is_retryable(), "{details}");
        }
        for kind in [ErrorKind::IO, ErrorKind::Timeout, ErrorKind::Canceled, ErrorKind::Routing] {
            assert!(storage(RedisError::new(kind.clone(), "connection lost")).is_retryable(), "{kind:?}");
        }
        for kind in [
            ErrorKind::Config,
            ErrorKind::Url,
            ErrorKind::Protocol,
            ErrorKind::Parse,
            ErrorKind::InvalidArgument,
        ] {
            assert!(!storage(RedisError::new(kind.clone(), "bad input")).is_retryable(), "{kind:?}");
        }
        assert!(!shape("a reply").is_retryable());
    }

    #[test]
    fn a_lost_answer_is_an_unknown_outcome_and_a_reply_is_not() -> Result<(), Error> {
        let id = TaskId::new("t1")?;
        for kind in [ErrorKind::IO, ErrorKind::Canceled, ErrorKind::Timeout, ErrorKind::Protocol] {
            let e = sent(storage(RedisError::new(kind.clone(), "connection lost")), &id);
            assert_eq!(e.outcome_unknown_id(), Some(&id), "{kind:?}");
            assert!(e.is_retryable(), "{kind:?}");
        }
        for e in [
            storage(reply("WRONGTYPE Operation against a key holding the wrong kind of value")),
            storage(reply("BUSY Redis is busy running a script")),
            storage(RedisError::new(ErrorKind::Backpressure, "too many in flight")),
            storage(RedisError::new(ErrorKind::Routing, "Failed to route command.")),
            Error::storage("not connected to Redis", true),
            shape("a reply"),
        ] {
            let shown = e.to_string();
            assert!(sent(e, &id).outcome_unknown_id().is_none(), "{shown}");
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "tls"))]
mod tls_tests {
    use std::io;

    use rustls::{AlertDescription, CertificateError};

    use super::*;

    /// An error whose source is `inner`, as a layer between fred and rustls.
    #[derive(Debug, thiserror::Error)]
    #[error("wrapped")]
    struct Wrapped(#[source] io::Error);

    #[test]
    fn tls_failures_are_told_by_type_at_any_depth() {
        let not_yet = rustls::Error::InvalidCertificate(CertificateError::NotValidYet);
        let handshake = io::Error::new(io::ErrorKind::InvalidData, not_yet);
        let found = rustls_error(&handshake).and_then(TlsProblem::of);
        assert_eq!(found, Some(TlsProblem::NotYetValid));

        let alert = rustls::Error::AlertReceived(AlertDescription::CertificateRequired);
        let nested = Wrapped(io::Error::other(alert.clone()));
        assert_eq!(rustls_error(&nested).and_then(TlsProblem::of), Some(TlsProblem::ClientCertMissing));

        let e: Error = TlsFailure {
            problem: TlsProblem::ClientCertMissing,
            server: "127.0.0.1:6380".to_owned(),
            source: alert.into(),
        }
        .into();
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(text.contains("requires a client certificate") && text.contains("tls_client_cert"), "{text}");

        // Words are no signal: an I/O error that only says "certificate".
        let words = io::Error::new(io::ErrorKind::InvalidData, "invalid peer certificate: UnknownIssuer");
        assert!(rustls_error(&words).is_none());
    }
}
