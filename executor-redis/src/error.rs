//! Converting fred errors into [`executor_core::Error::Storage`], retryable
//! only when the same call may succeed later.

use executor_core::Error;
use fred::error::{Error as RedisError, ErrorKind};

/// Replies after which the same call may succeed: the server is loading,
/// busy with a script, failing over, short of memory, or the cluster is
/// resharding. Matched against the reply's first word only (`BUSYKEY` is
/// not `BUSY`).
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

/// Wraps a fred error and says whether a retry may help.
pub(crate) fn storage(e: RedisError) -> Error {
    if *e.kind() == ErrorKind::Timeout {
        let reason =
            format!("Redis did not answer within the command timeout (is it down or overloaded?): {e}");
        return Error::storage(reason, true);
    }
    let retryable = retryable(&e);
    Error::storage(e, retryable)
}

/// A reply that does not have the shape a script returns.
pub(crate) fn shape(what: &str) -> Error {
    Error::storage(format!("unexpected reply from Redis: {what}"), false)
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
}
