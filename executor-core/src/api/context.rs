//! What a handler sees of its attempt, and how it reports failure.

use std::{any::Any, fmt, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::{Data, TaskId, Timestamp, api::data::DataMap};

/// The attempt a handler runs in: take it as a parameter of a
/// `#[reliable_task]` function (alone or after the payload).
///
/// Use [`TaskContext::id`] and [`TaskContext::fence`] to make side effects
/// idempotent: a task can run again if its worker died mid-attempt.
#[derive(Clone, Debug)]
pub struct TaskContext {
    pub(crate) id: TaskId,
    pub(crate) name: String,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) fence: u64,
    pub(crate) deadline: Option<Timestamp>,
    pub(crate) cancel: CancellationToken,
    pub(crate) data: Arc<DataMap>,
    /// The running executor's stop, `None` for a context made by `for_test`.
    pub(crate) executor_stop: Option<CancellationToken>,
}

impl TaskContext {
    /// A context for calling a handler directly, e.g. in a unit test.
    pub fn for_test(id: TaskId, name: impl Into<String>) -> Self {
        Self {
            id,
            name: name.into(),
            attempt: 1,
            max_attempts: 1,
            fence: 1,
            deadline: None,
            cancel: CancellationToken::new(),
            data: Arc::default(),
            executor_stop: None,
        }
    }

    /// Starts the graceful shutdown of the executor running this attempt
    /// (apalis' `WorkerContext::stop`): it stops claiming, lets running
    /// attempts (this one included) finish within its grace, and the
    /// owner's `shutdown().await` or `run_until` returns. Answers whether
    /// there was an executor to stop (`false` for a context made with
    /// [`TaskContext::for_test`]).
    pub fn stop_executor(&self) -> bool {
        self.executor_stop.as_ref().inspect(|stop| stop.cancel()).is_some()
    }

    /// Adds a value of the application's state, as
    /// [`ExecutorBuilder::data`](crate::ExecutorBuilder::data) does for a
    /// running executor (for calling a handler directly in a test).
    pub fn with_data<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.data).insert(value);
        self
    }

    /// The application's value of type `T` given to the executor builder
    /// with `.data(..)`, if any; handlers usually take a `Data<T>`
    /// parameter instead, which `build()` checks.
    pub fn data<T: Clone + 'static>(&self) -> Option<Data<T>> {
        self.data.get::<T>().map(Data)
    }

    /// Used by the code `#[reliable_task]` generates for a `Data<T>` parameter.
    #[doc(hidden)]
    pub fn __data<T: Clone + 'static>(&self) -> Result<Data<T>, String> {
        self.data().ok_or_else(|| {
            format!("no `{}` was given to the executor builder with `.data(..)`", std::any::type_name::<T>())
        })
    }

    /// The task's id.
    pub fn id(&self) -> &TaskId {
        &self.id
    }

    /// The handler name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This attempt's number, 1 for the first.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Attempts allowed in all.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether this is the last attempt before the dead letter.
    pub fn is_last_attempt(&self) -> bool {
        self.attempt >= self.max_attempts
    }

    /// The lease's fence: grows with every claim, so `(id, fence)` names this
    /// attempt uniquely; a write keyed by it is idempotent.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// `created_at + max_duration`, if set.
    pub fn deadline(&self) -> Option<Timestamp> {
        self.deadline
    }

    /// Fires when the attempt should stop: cancel requested, lease lost,
    /// timeout, or shutdown past its grace period.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the attempt should stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the attempt should stop; `select!` on it in long handlers.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }
}

/// Why an attempt failed, and what to do about it.
///
/// Any `std::error::Error` converts with `?`. By default a failure is retried
/// by the task's policy; [`TaskError::abort`] dead-letters at once and
/// [`TaskError::retry_after`] picks the delay.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::TaskError;
///
/// fn parse(s: &str) -> Result<u32, TaskError> {
///     Ok(s.parse::<u32>()?) // ParseIntError converts: retried
/// }
/// assert!(parse("x").is_err());
/// let e = TaskError::retry_after("rate limited", Duration::from_secs(30));
/// assert_eq!(e.to_string(), "rate limited");
/// ```
pub struct TaskError {
    message: String,
    action: Action,
}

/// What the runtime does after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Retry by the task's policy, dead letter when attempts run out.
    Retry,
    /// Retry after this delay instead of the policy's.
    RetryAfter(Duration),
    /// Do not retry: `FAILED` now.
    Abort,
}

impl TaskError {
    /// A failure retried by the task's policy.
    pub fn retry(message: impl fmt::Display) -> Self {
        Self { message: message.to_string(), action: Action::Retry }
    }

    /// A failure retried after `delay` (still within the retry limit).
    pub fn retry_after(message: impl fmt::Display, delay: Duration) -> Self {
        Self { message: message.to_string(), action: Action::RetryAfter(delay) }
    }

    /// A failure that no retry can fix: the task goes to the dead letter now.
    pub fn abort(message: impl fmt::Display) -> Self {
        Self { message: message.to_string(), action: Action::Abort }
    }

    /// The message recorded as the task's `last_error`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What the runtime will do.
    pub fn action(&self) -> Action {
        self.action
    }

    /// Converts any displayable error, keeping a `TaskError` as it is.
    pub fn from_display<E: fmt::Display + 'static>(e: E) -> Self {
        let any: Box<dyn Any> = Box::new(e);
        match any.downcast::<TaskError>() {
            Ok(task_error) => *task_error,
            Err(other) => match other.downcast::<E>() {
                // `{:#}` keeps the cause chain of errors that print it (anyhow).
                Ok(e) => Self::retry(format_args!("{e:#}")),
                Err(_) => Self::retry("handler failed"),
            },
        }
    }
}

impl fmt::Debug for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskError").field("message", &self.message).field("action", &self.action).finish()
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for TaskError {
    fn from(e: E) -> Self {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        Self::retry(message)
    }
}

/// What a handler may return: `()` or `Result<(), E>` with `E` displayable.
/// Used by the code `#[reliable_task]` generates.
#[diagnostic::on_unimplemented(
    message = "a task handler must return `()` or `Result<(), E>` with `E: Display`, not `{Self}`",
    label = "this return type is not a task result",
    note = "return `Ok(())` on success and `Err(TaskError::retry(..))` (or any displayable error) on failure"
)]
pub trait IntoTaskResult {
    /// The attempt's result.
    fn into_task_result(self) -> Result<(), TaskError>;
}

impl IntoTaskResult for () {
    fn into_task_result(self) -> Result<(), TaskError> {
        Ok(())
    }
}

impl<E: fmt::Display + 'static> IntoTaskResult for Result<(), E> {
    fn into_task_result(self) -> Result<(), TaskError> {
        self.map_err(TaskError::from_display)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_errors_keep_their_action_through_into_task_result() {
        let r: Result<(), TaskError> = Err(TaskError::abort("bad card"));
        let e = r.into_task_result().err();
        assert_eq!(e.map(|e| e.action()), Some(Action::Abort));
    }

    #[test]
    fn other_errors_become_retries_with_their_message() {
        let r: Result<(), String> = Err("flaky".into());
        let e = r.into_task_result().err();
        assert_eq!(e.as_ref().map(TaskError::message), Some("flaky"));
        assert_eq!(e.map(|e| e.action()), Some(Action::Retry));
        assert!(().into_task_result().is_ok());
    }
}
