//! Listeners: user code told about task events.

use std::{fmt, panic::AssertUnwindSafe, sync::Arc};

use crate::{SubmitOutcome, TaskId, TaskRecord, TaskState};

/// Hooks called on task events. Every method has a no-op default; implement
/// the ones you need. Calls are synchronous and should be quick: hand slow
/// work to a channel. A listener that panics is caught and logged, never
/// harming the runtime.
///
/// ```
/// use reliable_executor::{Listener, TaskRecord};
///
/// #[derive(Debug)]
/// struct Audit;
/// impl Listener for Audit {
///     fn on_completed(&self, task: &TaskRecord) {
///         println!("{} done after {} attempts", task.id, task.attempts);
///     }
/// }
/// ```
pub trait Listener: Send + Sync + fmt::Debug + 'static {
    /// A submit reached the store.
    fn on_submitted(&self, _id: &TaskId, _name: &str, _outcome: SubmitOutcome) {}
    /// An attempt started.
    fn on_started(&self, _task: &TaskRecord) {}
    /// The task completed.
    fn on_completed(&self, _task: &TaskRecord) {}
    /// An attempt failed and a retry was scheduled after `delay_ms`.
    fn on_retry_scheduled(&self, _task: &TaskRecord, _error: &str, _delay_ms: u64) {}
    /// The task went to the dead letter (`FAILED`, `TIMEOUT` or `ERROR`).
    fn on_dead_lettered(&self, _task: &TaskRecord, _state: TaskState, _error: &str) {}
    /// The task was cancelled.
    fn on_cancelled(&self, _id: &TaskId) {}
}

/// The registered listeners, each call isolated from panics.
#[derive(Clone, Debug, Default)]
pub(crate) struct Listeners(Arc<Vec<Arc<dyn Listener>>>);

impl Listeners {
    pub(crate) fn new(list: Vec<Arc<dyn Listener>>) -> Self {
        Self(Arc::new(list))
    }

    /// No listener is registered: callers skip work done only for them.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn each(&self, event: &str, f: impl Fn(&dyn Listener)) {
        for l in self.0.iter() {
            if std::panic::catch_unwind(AssertUnwindSafe(|| f(l.as_ref()))).is_err() {
                tracing::error!(listener = ?l, event, "listener panicked; the runtime carries on");
            }
        }
    }

    pub(crate) fn submitted(&self, id: &TaskId, name: &str, outcome: SubmitOutcome) {
        self.each("submitted", |l| l.on_submitted(id, name, outcome));
    }
    pub(crate) fn started(&self, task: &TaskRecord) {
        self.each("started", |l| l.on_started(task));
    }
    pub(crate) fn completed(&self, task: &TaskRecord) {
        self.each("completed", |l| l.on_completed(task));
    }
    pub(crate) fn retry_scheduled(&self, task: &TaskRecord, error: &str, delay_ms: u64) {
        self.each("retry_scheduled", |l| l.on_retry_scheduled(task, error, delay_ms));
    }
    pub(crate) fn dead_lettered(&self, task: &TaskRecord, state: TaskState, error: &str) {
        self.each("dead_lettered", |l| l.on_dead_lettered(task, state, error));
    }
    pub(crate) fn cancelled(&self, id: &TaskId) {
        self.each("cancelled", |l| l.on_cancelled(id));
    }
}
