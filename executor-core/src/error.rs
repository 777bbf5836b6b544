//! The one error type of `executor-core`.

use std::time::Duration;

use crate::{TaskId, TaskState};

/// A `Result` whose error defaults to [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Boxed source error of a storage backend.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong when submitting, querying or running tasks.
///
/// Storage crates convert their driver errors into [`Error::Storage`] and say
/// whether retrying the same call may succeed; a submit whose request was
/// sent and whose answer was lost is [`Error::OutcomeUnknown`] instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A plain submit used an id that is already taken.
    #[error("task id `{0}` already exists; submit idempotently to get the existing task back")]
    DuplicateId(TaskId),

    /// No task has this id (never submitted, or trimmed by retention).
    #[error("task `{0}` not found")]
    NotFound(TaskId),

    /// The lease used to finish or renew a task is no longer the current one:
    /// the task was reaped, cancelled or claimed again by another worker.
    #[error("stale lease for task `{id}`: fence {fence} is no longer current")]
    StaleFence {
        /// The task.
        id: TaskId,
        /// The fence the caller held.
        fence: u64,
    },

    /// The task is not in a state that allows the requested change.
    #[error("task `{id}` is {state}: cannot {action}")]
    IllegalTransition {
        /// The task.
        id: TaskId,
        /// Its current state.
        state: TaskState,
        /// What was asked (`cancel`, `requeue`, ...).
        action: &'static str,
    },

    /// An option or identifier failed validation before reaching the store.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// What was invalid (`task id`, `namespace`, `retry policy`, ...).
        what: &'static str,
        /// Why, and how to fix it.
        reason: String,
    },

    /// The payload is larger than the store accepts.
    #[error("payload of {size} bytes exceeds the limit of {limit} bytes")]
    PayloadTooLarge {
        /// Encoded size.
        size: usize,
        /// Configured limit.
        limit: usize,
    },

    /// The payload could not be encoded to JSON.
    #[error("payload does not encode: {0}")]
    Encode(#[source] serde_json::Error),

    /// No handler is registered under this task name: at submit through a
    /// client that knows the handlers, and at `build()` for a name given to
    /// `expect_handlers`.
    #[error(
        "no handler is registered for task name `{0}`; if it lives in another crate, reference that \
         crate from the binary (`use my_handlers as _;`) so the linker keeps its handlers"
    )]
    UnknownTask(String),

    /// Two handlers were registered under one name.
    #[error("task name `{name}` is registered twice: by {first} and by {second}")]
    DuplicateHandler {
        /// The shared name.
        name: String,
        /// Where the first registration came from.
        first: String,
        /// Where the second registration came from.
        second: String,
    },

    /// A handler takes `Data<T>` of a type that was not given to the
    /// executor builder with `.data(..)`; `build()` refuses to start.
    #[error(
        "handler `{handler}` ({location}) takes `Data<{type_name}>`, but no `{type_name}` was given to the \
         executor builder: add `.data(value)` with a value of that type before `.build()`"
    )]
    MissingData {
        /// The handler's task name.
        handler: String,
        /// Where the handler was defined.
        location: String,
        /// The missing type.
        type_name: &'static str,
    },

    /// The store failed or could not be reached.
    #[error("storage error{}: {source}", if *.retryable { " (retryable)" } else { "" })]
    Storage {
        /// The driver's error.
        #[source]
        source: BoxError,
        /// Whether the same call may succeed when retried.
        retryable: bool,
    },

    /// A submit reached the store, or may have, and its answer was lost: the
    /// connection broke or the command timed out after the request was
    /// written, so the task may or may not have been stored. Retryable, and
    /// safe to retry under the same id: a resend of the same submit
    /// ([`crate::storage::NewTask::resend`]) answers `Created` whether or
    /// not its lost try stored the task, and an idempotent submit under
    /// this id (`TaskBuilder::id(..)` with `.idempotent()`) answers
    /// `Created` or `Existing`. A submit under a new id may run the task
    /// twice. [`crate::Client`] (and so the typed helpers of
    /// `#[reliable_task]`) resends such a submit itself a few times
    /// ([`crate::Client::submit_retry`]) and returns this error only when
    /// every try ended so. A submit that failed before anything was sent (no
    /// connection, the pool timed out) is an [`Error::Storage`] instead.
    ///
    /// ```
    /// use reliable_executor::{Error, TaskId};
    ///
    /// let id = TaskId::new("order-7")?;
    /// let e = Error::outcome_unknown(id.clone(), "connection reset by peer");
    /// assert!(e.is_retryable());
    /// assert_eq!(e.outcome_unknown_id(), Some(&id));
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    #[error(
        "the submit of task `{id}` may or may not have been stored: the connection was lost after it was \
         sent ({source}); submitting again under the same id is safe (idempotently, or as the same submit), \
         under a new id it may run twice"
    )]
    OutcomeUnknown {
        /// The task's id: the one to submit again under.
        id: TaskId,
        /// The driver's error.
        #[source]
        source: BoxError,
    },

    /// The store answered with data it should never hold (for example a record
    /// edited by hand).
    #[error("corrupt record for task `{id}`: {reason}")]
    Corrupt {
        /// The task.
        id: TaskId,
        /// What did not parse.
        reason: String,
    },

    /// The store lacks an optional ability the call needs (for example a
    /// store that cannot serve as a tier of `TieredStorage`).
    #[error("this store does not support `{method}`: {reason}")]
    Unsupported {
        /// The method or ability.
        method: &'static str,
        /// Why, and what to use instead.
        reason: String,
    },

    /// The executor's own runtime failed (a background task panicked or was
    /// cancelled), not the store.
    #[error("executor runtime failed: {0}")]
    Runtime(String),

    /// The executor is shutting down and no longer accepts this call.
    #[error("the executor is shutting down")]
    ShuttingDown,

    /// An operation did not finish in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
}

impl Error {
    /// Wraps a backend error.
    pub fn storage(source: impl Into<BoxError>, retryable: bool) -> Self {
        Self::Storage { source: source.into(), retryable }
    }

    /// [`Error::Unsupported`]: the store lacks `method` (or a variant of
    /// its input newer than the store), for `reason`.
    pub fn unsupported(method: &'static str, reason: impl Into<String>) -> Self {
        Self::Unsupported { method, reason: reason.into() }
    }

    /// [`Error::OutcomeUnknown`]: the submit of task `id` was sent and its
    /// answer lost to `source`.
    pub fn outcome_unknown(id: TaskId, source: impl Into<BoxError>) -> Self {
        Self::OutcomeUnknown { id, source: source.into() }
    }

    /// The id of the task whose submit has an unknown outcome
    /// ([`Error::OutcomeUnknown`]): submit again under this id, never a new
    /// one. `None` for every other error.
    pub fn outcome_unknown_id(&self) -> Option<&TaskId> {
        match self {
            Self::OutcomeUnknown { id, .. } => Some(id),
            _ => None,
        }
    }

    /// An [`Error::Invalid`] with a reason.
    pub fn invalid(what: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid { what, reason: reason.into() }
    }

    /// Whether retrying the same call may succeed (store unreachable, lock
    /// conflicts, a submit whose answer was lost). Validation errors are
    /// never retryable.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Storage { retryable: true, .. } | Self::Timeout(_) | Self::OutcomeUnknown { .. })
    }
}
