//! What a submit checks the same on every dialect before it sends anything.

use executor_core::{Error, Result, RetryPolicy, storage::Due};

use crate::stmt::{ms, ts};

/// A task's retry policy as its column keeps it (JSON), or `None` for the
/// handler's default.
///
/// # Errors
/// [`Error::Invalid`] for a custom (closure) backoff: it is code, and
/// cannot be stored with a task.
pub fn stored_retry(retry: Option<&RetryPolicy>) -> Result<Option<String>> {
    match retry {
        None => Ok(None),
        Some(RetryPolicy::Custom(_)) => Err(Error::invalid(
            "retry policy",
            "a custom backoff is code and cannot be stored with a task; set it as the handler's default",
        )),
        Some(policy) => serde_json::to_string(policy).map(Some).map_err(Error::Encode),
    }
}

/// A task's due time as the insert statements take it: an absolute time
/// (milliseconds since the epoch) or an offset from the server's clock.
///
/// # Errors
/// [`Error::Unsupported`] for a kind of due time newer than this store.
pub fn due_columns(due: Due) -> Result<(Option<i64>, i64)> {
    match due {
        Due::Now => Ok((None, 0)),
        Due::After(d) => Ok((None, ms(d))),
        Due::At(t) => Ok((Some(ts(t)), 0)),
        other => Err(Error::unsupported("submit", format!("due time {other:?} is newer than this store"))),
    }
}
