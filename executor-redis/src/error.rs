//! Converting fred errors into [`executor_core::Error::Storage`].

use executor_core::Error;
use fred::error::{Error as RedisError, ErrorKind};

/// Replies after which the same call may succeed: the server is loading,
/// busy with a script, failing over, or the cluster is resharding.
const RETRYABLE_REPLIES: &[&str] =
    &["LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "MOVED", "ASK", "OOM"];

/// Wraps a fred error and says whether a retry may help: connection, timeout
/// and cluster routing trouble may pass; a script or argument error will not.
pub(crate) fn storage(e: RedisError) -> Error {
    let retryable = match e.kind() {
        ErrorKind::IO
        | ErrorKind::Timeout
        | ErrorKind::Canceled
        | ErrorKind::Backpressure
        | ErrorKind::Cluster
        | ErrorKind::Routing => true,
        _ => RETRYABLE_REPLIES.iter().any(|r| e.details().starts_with(r)),
    };
    if *e.kind() == ErrorKind::Timeout {
        let reason =
            format!("Redis did not answer within the command timeout (is it down or overloaded?): {e}");
        return Error::storage(reason, true);
    }
    Error::storage(e, retryable)
}

/// A reply that does not have the shape a script returns.
pub(crate) fn shape(what: &str) -> Error {
    Error::storage(format!("unexpected reply from Redis: {what}"), false)
}
