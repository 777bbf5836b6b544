//! Converting fred errors into [`executor_core::Error::Storage`], retryable
//! only when the same call may succeed later.

use std::fmt;

#[cfg(feature = "tls")]
use executor_core::{
    BoxError,
    tls::{TlsFailure, TlsProblem},
};
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

/// The error of a submit's script call once it was handed to fred, for
/// task `id`: [`Error::OutcomeUnknown`] when the command may have run and
/// its answer was lost, else `e` as it is. fred does not say whether a
/// command reached the socket, so every error of a command that may have:
/// the connection broke (`IO`, `Canceled`: the storage's commands fail
/// fast, so fred answers a command in flight on a dropped connection at
/// once instead of resending it), a reply that did not parse (`Protocol`),
/// or no answer within the command timeout. An
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

/// A first connection to `server` (`host:port`) refused for `problem`: a
/// non-retryable error that says what is wrong and which setting fixes it,
/// with the error that told (rustls', or fred's when the server answered in
/// plain text or only in TLS) as its source.
#[cfg(feature = "tls")]
pub(crate) fn tls_refused(problem: TlsProblem, server: &str, source: BoxError) -> Error {
    TlsFailure::new(format!("Redis at {server}"), problem, tls_fix(problem), source).into()
}

/// The setting of the builder, the URL or of Redis that fixes `problem`.
#[cfg(feature = "tls")]
fn tls_fix(problem: TlsProblem) -> &'static str {
    match problem {
        TlsProblem::Expired | TlsProblem::NotYetValid => {
            "renew the certificate Redis presents (its `tls-cert-file`), or set this machine's clock right"
        }
        TlsProblem::UnknownIssuer => {
            "trust the CA that signed it with RedisStorageBuilder::tls_ca_file (the system's CA \
             certificates otherwise)"
        }
        TlsProblem::WrongHost => {
            "connect with a host name or IP address the certificate lists, or give Redis a certificate for \
             this one (its `tls-cert-file`)"
        }
        TlsProblem::BadSignature | TlsProblem::OtherCertificate => {
            "give Redis a server certificate (its `tls-cert-file`) signed by a CA this client trusts \
             (RedisStorageBuilder::tls_ca_file)"
        }
        TlsProblem::ClientCertRefused => {
            "present a certificate signed by the CA Redis checks clients against (its `tls-ca-cert-file`) \
             with RedisStorageBuilder::tls_client_cert"
        }
        TlsProblem::ClientCertMissing => {
            "Redis has `tls-auth-clients yes`: present a certificate with \
             RedisStorageBuilder::tls_client_cert"
        }
        TlsProblem::NoCommonProtocol => {
            "allow TLS 1.2 or 1.3 on Redis (its `tls-protocols` and `tls-ciphersuites`)"
        }
        TlsProblem::NotTls => "use a `redis://` URL for a plain port, or the port of Redis's `tls-port`",
        TlsProblem::TlsOnly => "use a `rediss://` URL (`rediss-cluster://` for a cluster)",
        // None of these comes from a handshake with Redis.
        _ => {
            "check Redis's TLS settings (`tls-port`, `tls-cert-file`) and this client's \
             (RedisStorageBuilder::tls_ca_file, RedisStorageBuilder::tls_client_cert)"
        }
    }
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
    use rustls::AlertDescription;

    use super::*;

    #[test]
    fn a_tls_refusal_names_the_server_and_the_builder_setting() {
        let alert = rustls::Error::AlertReceived(AlertDescription::CertificateRequired);
        let e = tls_refused(TlsProblem::ClientCertMissing, "127.0.0.1:6380", alert.into());
        assert!(!e.is_retryable());
        let text = e.to_string();
        assert!(text.contains("TLS with Redis at 127.0.0.1:6380 failed"), "{text}");
        assert!(text.contains("requires a client certificate") && text.contains("tls_client_cert"), "{text}");
    }
}
