//! What a task is: the record a status query shows, and what a submit sends.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{
    Error, QueueName, Result, RetryPolicy, TaskId, TaskState, Timestamp, WorkerId,
    options::MAX_RETRY_LIMIT,
    time::{check_duration, check_instant},
};

/// Everything the store knows about one task; what `status` returns.
///
/// `#[non_exhaustive]`: fields are added as the project grows (queues,
/// priorities, progress), so code outside this crate reads the fields and
/// builds a record with [`TaskRecord::new`] (stores decoding their rows),
/// then sets what it knows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The id.
    pub id: TaskId,
    /// The handler name.
    pub name: String,
    /// Current state.
    pub state: TaskState,
    /// The JSON-encoded payload.
    #[serde(with = "payload_json")]
    pub payload: Vec<u8>,
    /// Attempts started so far (including a running one).
    pub attempts: u32,
    /// Attempts allowed in all: `retry_limit + 1`.
    pub max_attempts: u32,
    /// Grows with every claim and reap; a lease is valid only with the
    /// current fence (no two live attempts).
    pub fence: u64,
    /// When it was submitted (store clock).
    pub created_at: Timestamp,
    /// When it may next start.
    pub due_at: Timestamp,
    /// When the current or last attempt started.
    pub started_at: Option<Timestamp>,
    /// When it reached a terminal state.
    pub finished_at: Option<Timestamp>,
    /// `created_at + max_duration`: past it the task ends `TIMEOUT`.
    pub deadline: Option<Timestamp>,
    /// Per-attempt timeout, if any.
    #[serde(with = "opt_duration_ms")]
    pub timeout: Option<Duration>,
    /// Retry policy chosen at submit; `None` uses the handler's default.
    pub retry: Option<RetryPolicy>,
    /// The reason of the last failure.
    pub last_error: Option<String>,
    /// The worker holding the lease while `RUNNING`.
    pub worker: Option<WorkerId>,
    /// When the lease expires while `RUNNING`.
    pub lease_until: Option<Timestamp>,
    /// A cancel was asked while it ran; the worker is told at its next heartbeat.
    pub cancel_requested: bool,
    /// The debounce key it was submitted under, if any.
    pub debounce_key: Option<String>,
    /// The queue it waits in ([`crate::queue::DEFAULT_QUEUE`] unless named).
    #[serde(default)]
    pub queue: QueueName,
    /// Its priority within the queue, 0..=[`crate::queue::MAX_PRIORITY`], higher
    /// first.
    #[serde(default)]
    pub priority: u8,
    /// The attempts that ended before the current or last one, oldest
    /// first, at most [`crate::attempt_log::MAX_ATTEMPT_LOG`] (the newest; older ones are
    /// dropped). The current or last attempt is not in it: it is this
    /// record's own `worker`, `started_at`, `finished_at` and `last_error`;
    /// [`TaskRecord::all_attempts`] joins both.
    ///
    /// A store appends to it in the same atomic step as the transition that
    /// ends an attempt without finishing the task: a retry
    /// ([`crate::attempt_log::AttemptOutcome::Failed`]), a reap that puts the task back
    /// to wait ([`crate::attempt_log::AttemptOutcome::LeaseExpired`]), and a requeue of a
    /// dead-lettered task, which keeps the attempt that dead-lettered it
    /// ([`crate::attempt_log::AttemptOutcome::Dead`]). Completions, releases and
    /// postponements write nothing. The log lives as long as the task:
    /// retention deletes both together.
    ///
    /// `get` (a status query) and the tier methods fill it; claims and list
    /// pages may leave it empty, so they stay as lean as before it existed.
    #[serde(default)]
    pub attempt_log: Vec<crate::attempt_log::AttemptRecord>,
}

impl TaskRecord {
    /// A record of `state` with only its identity and times known: no
    /// attempt started (and none logged), one allowed, fence 0, no deadline, timeout, retry
    /// override, error, worker or lease. Stores build their decoded rows
    /// from it and set the other fields.
    ///
    /// ```
    /// use reliable_executor::{TaskId, TaskRecord, TaskState, Timestamp};
    ///
    /// let mut record = TaskRecord::new(
    ///     TaskId::new("t1")?,
    ///     "send_email",
    ///     TaskState::Pending,
    ///     b"{}".to_vec(),
    ///     Timestamp::from_millis(1_000),
    ///     Timestamp::from_millis(2_000),
    /// );
    /// record.max_attempts = 4;
    /// assert!(record.attempts_left());
    /// assert!(record.attempt_log.is_empty());
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    pub fn new(
        id: TaskId,
        name: impl Into<String>,
        state: TaskState,
        payload: Vec<u8>,
        created_at: Timestamp,
        due_at: Timestamp,
    ) -> Self {
        Self {
            id,
            name: name.into(),
            state,
            payload,
            attempts: 0,
            max_attempts: 1,
            fence: 0,
            created_at,
            due_at,
            started_at: None,
            finished_at: None,
            deadline: None,
            timeout: None,
            retry: None,
            last_error: None,
            worker: None,
            lease_until: None,
            cancel_requested: false,
            debounce_key: None,
            queue: QueueName::default(),
            priority: 0,
            attempt_log: Vec::new(),
        }
    }

    /// The lease a worker holds on this task while it is `RUNNING`.
    pub fn lease(&self) -> Option<Lease> {
        match (self.state, &self.worker) {
            (TaskState::Running, Some(worker)) => {
                Some(Lease::new(self.id.clone(), self.fence, worker.clone()))
            }
            _ => None,
        }
    }

    /// Whether a failed attempt leaves attempts to retry.
    pub fn attempts_left(&self) -> bool {
        self.attempts < self.max_attempts
    }
}

/// Proof of ownership of one attempt: finishing or renewing with a fence
/// that is no longer current is refused (no two live attempts).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lease {
    /// The task.
    pub id: TaskId,
    /// The fence given by the claim.
    pub fence: u64,
    /// The worker that claimed it.
    pub worker: WorkerId,
}

impl Lease {
    /// The lease of `worker` on task `id` at `fence`.
    pub fn new(id: TaskId, fence: u64, worker: WorkerId) -> Self {
        Self { id, fence, worker }
    }
}

/// The largest fence (and attempt count) every store keeps exactly: 2^53 - 1,
/// what a Lua number holds without rounding. A store meeting a record past
/// it (edited by hand) moves it aside to `ERROR` rather than failing on it;
/// tiers refuse to import one.
pub const MAX_FENCE: u64 = (1 << 53) - 1;

/// When a submitted task becomes due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Due {
    /// At once.
    #[default]
    Now,
    /// After a delay from the store's now.
    After(Duration),
    /// At a point in time.
    At(Timestamp),
}

/// How a submit treats an id or key that already exists.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SubmitMode {
    /// A new task; a duplicate id is refused with [`crate::Error::DuplicateId`].
    #[default]
    Plain,
    /// A duplicate id returns the existing task instead of an error.
    Idempotent,
    /// Submits with the same key before the task runs move its due time to
    /// `now + window` and replace its payload, so it runs once after the
    /// last submit (or at `first submit + max_wait`, whichever comes first).
    Debounce(Debounce),
}

/// Settings of a debounced submit: [`Debounce::new`], then
/// [`Debounce::max_wait`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Debounce {
    /// Submits sharing a key coalesce while the task waits.
    pub key: String,
    /// Quiet time after the last submit before the task runs.
    pub window: Duration,
    /// Longest a steady stream of submits may postpone the task, counted from
    /// the first submit.
    pub max_wait: Option<Duration>,
}

impl Debounce {
    /// Submits under `key` coalesce while the task waits; each moves it to
    /// `now + window`. No cap on the total wait.
    pub fn new(key: impl Into<String>, window: Duration) -> Self {
        Self { key: key.into(), window, max_wait: None }
    }

    /// Caps how long a steady stream of submits may postpone the task.
    #[must_use]
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }
}

/// A task as the runtime hands it to a store's `submit`: one submit of it.
/// Users build one with [`crate::TaskBuilder::into_new_task`] (or the typed
/// `with(..)` of a `#[reliable_task]`); [`NewTask::new`] is for stores and
/// tests.
///
/// Each `NewTask` carries the nonce of its submit ([`NewTask::nonce`]),
/// made when it is built. The nonce is part of the value: a clone is the
/// same submit (sent again, a store answers it as the first one, and one
/// task exists), and `==` compares it, so two tasks built apart are two
/// submits and never equal. Another submit is another `NewTask`: build it
/// again. Changing a clone's fields does not make it another submit: a
/// store knows a submit by its id and nonce, and answers a resend as the
/// first one whatever else it carries.
///
/// New fields (queue, priority, ..) are additions, not breaking changes:
/// outside this crate a literal does not compile, the constructor does.
///
/// ```compile_fail
/// use reliable_executor::{TaskId, storage::{Due, NewTask, SubmitMode}};
///
/// let task = NewTask {
///     id: TaskId::generate(),
///     name: "resize".into(),
///     payload: b"{}".to_vec(),
///     due: Due::Now,
///     max_attempts: 1,
///     max_duration: None,
///     timeout: None,
///     retry: None,
///     mode: SubmitMode::Plain,
/// };
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NewTask {
    /// The id (for a debounced submit, the id the task gets if none waits
    /// under its key).
    pub id: TaskId,
    /// The handler name.
    pub name: String,
    /// JSON-encoded payload.
    pub payload: Vec<u8>,
    /// When it becomes due (ignored by debounce, which uses its window).
    pub due: Due,
    /// `retry_limit + 1`, at least 1.
    pub max_attempts: u32,
    /// Deadline from creation.
    pub max_duration: Option<Duration>,
    /// Per-attempt timeout.
    pub timeout: Option<Duration>,
    /// Retry policy override (storable policies only).
    pub retry: Option<RetryPolicy>,
    /// Plain, idempotent or debounced.
    pub mode: SubmitMode,
    /// The queue it waits in ([`crate::queue::DEFAULT_QUEUE`] unless named).
    pub queue: QueueName,
    /// Its priority within the queue, 0..=[`crate::queue::MAX_PRIORITY`], higher
    /// first.
    pub priority: u8,
    /// The nonce of this submit ([`NewTask::nonce`]).
    pub(crate) nonce: u64,
}

/// A new submit's nonce: random, never 0, so a store may keep 0 (or
/// nothing) for "no nonce".
pub(crate) fn new_nonce() -> u64 {
    rand::random::<u64>().max(1)
}

impl NewTask {
    /// A task of handler `name` with `payload` (JSON bytes), due now, with
    /// the default retry limit ([`crate::options::DEFAULT_RETRY_LIMIT`]), no deadline,
    /// no timeout, the handler's retry policy, and a plain submit, under a
    /// nonce of its own. Set the other fields before submitting.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reliable_executor::{TaskId, storage::{Due, NewTask}};
    ///
    /// let mut task = NewTask::new(TaskId::new("t1")?, "resize", b"{}".to_vec());
    /// task.due = Due::After(Duration::from_secs(5));
    /// assert!(task.validate().is_ok());
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    pub fn new(id: TaskId, name: impl Into<String>, payload: Vec<u8>) -> Self {
        Self {
            id,
            name: name.into(),
            payload,
            due: Due::Now,
            max_attempts: crate::options::DEFAULT_RETRY_LIMIT + 1,
            max_duration: None,
            timeout: None,
            retry: None,
            mode: SubmitMode::Plain,
            queue: QueueName::default(),
            priority: 0,
            nonce: new_nonce(),
        }
    }

    /// A task as [`NewTask::new`] makes it, under an id generated for it
    /// ([`TaskId::generate`]): what [`crate::TaskBuilder`] submits when no
    /// `.id(..)` is given.
    ///
    /// ```
    /// use reliable_executor::storage::NewTask;
    ///
    /// let task = NewTask::with_generated_id("resize", b"{}".to_vec());
    /// assert!(task.id.is_generated());
    /// ```
    pub fn with_generated_id(name: impl Into<String>, payload: Vec<u8>) -> Self {
        Self::new(TaskId::generate(), name, payload)
    }

    /// The nonce of this submit: a random number, never 0, made when the
    /// task was built, that a store keeps with the task the submit creates,
    /// so that the same submit sent again after its answer was lost
    /// ([`crate::Error::OutcomeUnknown`]) is told from another submit of the
    /// same id. A clone carries it (it is the same submit); a task built
    /// again has its own.
    ///
    /// ```
    /// use reliable_executor::{TaskId, storage::NewTask};
    ///
    /// let task = NewTask::new(TaskId::new("order-7")?, "resize", b"{}".to_vec());
    /// assert_eq!(task.clone().nonce(), task.nonce());
    /// let another = NewTask::new(TaskId::new("order-7")?, "resize", b"{}".to_vec());
    /// assert_ne!(another.nonce(), task.nonce());
    /// assert_ne!(another, task);
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    /// This task under `nonce`: the same submit as the task that carried
    /// it. For a producer that keeps what it sends (an outbox row, a file)
    /// and sends it again after a crash lost the answer, so the store
    /// answers the resend as the first submit, and for a test that compares
    /// a built task with the one it expects.
    ///
    /// ```
    /// use std::num::NonZeroU64;
    /// use reliable_executor::{TaskId, storage::NewTask};
    ///
    /// let sent = NewTask::new(TaskId::new("order-7")?, "resize", b"{}".to_vec());
    /// let kept = NonZeroU64::new(sent.nonce()).ok_or("a nonce is never 0")?;
    /// let again = NewTask::new(TaskId::new("order-7")?, "resize", b"{}".to_vec()).with_nonce(kept);
    /// assert_eq!(again, sent);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_nonce(mut self, nonce: std::num::NonZeroU64) -> Self {
        self.nonce = nonce.get();
        self
    }

    /// This very submit, to send again after its outcome was lost
    /// ([`crate::Error::OutcomeUnknown`]): a clone, with the same id, nonce
    /// and fields (the name says why it is sent; any clone is the same
    /// submit). Exactly once: a store answers the resend `Created` when the
    /// lost try stored the task (and stores it otherwise), `Existing` for an
    /// idempotent submit on a store that does not tell the two apart, and
    /// [`crate::Error::DuplicateId`] only when another submit owns the id.
    /// [`crate::Client`] resends this way by itself
    /// ([`crate::Client::submit_retry`]).
    ///
    /// ```
    /// use reliable_executor::storage::NewTask;
    ///
    /// let task = NewTask::with_generated_id("resize", b"{}".to_vec());
    /// let again = task.resend();
    /// assert_eq!((again.id.clone(), again.nonce()), (task.id.clone(), task.nonce()));
    /// assert_eq!(again, task);
    /// ```
    #[must_use]
    pub fn resend(&self) -> Self {
        self.clone()
    }

    /// Checks every field against the ranges all stores share: a valid id
    /// and debounce key, `1..=MAX_RETRY_LIMIT + 1` attempts, every duration
    /// at most [`crate::time::MAX_DURATION`], a `run_at` no later than
    /// [`Timestamp::MAX`], a storable, valid retry policy. [`crate::Client`]
    /// calls it before a submit reaches the store, and every store calls it
    /// again at its entry point, so a task built by hand gets the same
    /// answer on every backend (bad input never panics nor loses tasks).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field and its range.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reliable_executor::{storage::Due, testing};
    ///
    /// let mut task = testing::new_task("t1");
    /// assert!(task.validate().is_ok());
    /// task.due = Due::After(Duration::MAX);
    /// assert!(task.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        crate::id::validate_key("task id", self.id.as_str(), crate::id::MAX_ID_LEN)?;
        crate::id::validate_key("task name", &self.name, crate::id::MAX_ID_LEN)?;
        crate::queue::check_priority(self.priority)?;
        if self.max_attempts == 0 || self.max_attempts > MAX_RETRY_LIMIT + 1 {
            return Err(Error::invalid(
                "max_attempts",
                format!(
                    "{} is outside 1..={} (retry_limit 0..={MAX_RETRY_LIMIT})",
                    self.max_attempts,
                    MAX_RETRY_LIMIT + 1
                ),
            ));
        }
        match self.due {
            Due::Now => {}
            Due::After(d) => check_duration("delay", d)?,
            Due::At(t) => check_instant("run_at", t)?,
        }
        if let Some(d) = self.max_duration {
            check_duration("max_duration", d)?;
        }
        if let Some(d) = self.timeout {
            check_duration("timeout", d)?;
        }
        if let Some(retry) = &self.retry {
            if !retry.is_storable() {
                return Err(Error::invalid(
                    "retry policy",
                    "a custom retry function is code: set it as the handler's default, not per submit",
                ));
            }
            retry.validate()?;
        }
        if let SubmitMode::Debounce(d) = &self.mode {
            crate::id::validate_key("debounce key", &d.key, crate::id::MAX_ID_LEN)?;
            check_duration("debounce window", d.window)?;
            if let Some(w) = d.max_wait {
                check_duration("debounce max_wait", w)?;
            }
        }
        Ok(())
    }
}

/// What a submit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SubmitOutcome {
    /// A new task was stored.
    Created,
    /// An idempotent submit found the id taken; nothing changed.
    Existing,
    /// A debounced submit moved a waiting task's due time and payload.
    Debounced,
}

impl SubmitOutcome {
    /// The name used in JSON and metrics labels: `created`, `existing`,
    /// `debounced`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Existing => "existing",
            Self::Debounced => "debounced",
        }
    }
}

/// The answer to a submit: the task's id and whether the submit created
/// it, found it already there (idempotent) or moved it (debounced).
///
/// ```
/// use reliable_executor::{Submitted, SubmitOutcome, TaskId};
///
/// let answer = Submitted::new(TaskId::new("order-7")?, SubmitOutcome::Existing);
/// assert!(!answer.is_created());
/// assert_eq!(answer.id.as_str(), "order-7");
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Submitted {
    /// The task's id (the existing one for `Existing` and `Debounced`).
    pub id: TaskId,
    /// What happened.
    pub outcome: SubmitOutcome,
}

impl Submitted {
    /// The answer for task `id`.
    pub fn new(id: TaskId, outcome: SubmitOutcome) -> Self {
        Self { id, outcome }
    }

    /// Whether this submit stored a new task.
    pub fn is_created(&self) -> bool {
        self.outcome == SubmitOutcome::Created
    }

    /// The task's id, giving up the outcome.
    pub fn into_id(self) -> TaskId {
        self.id
    }
}

impl AsRef<TaskId> for Submitted {
    fn as_ref(&self) -> &TaskId {
        &self.id
    }
}

impl From<Submitted> for TaskId {
    fn from(s: Submitted) -> Self {
        s.id
    }
}

/// How a worker ends an attempt, written with its lease's fence.
/// `#[non_exhaustive]`: a store matches the variants it writes and answers
/// [`Error::Unsupported`] for one it does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Finish {
    /// `RUNNING → COMPLETED`.
    Completed,
    /// `RUNNING → PENDING`, due after `delay`.
    Retry {
        /// Backoff before the next attempt.
        delay: Duration,
        /// Why the attempt failed.
        error: String,
    },
    /// `RUNNING → FAILED` (dead letter).
    Failed {
        /// Why.
        error: String,
    },
    /// `RUNNING → TIMEOUT` (dead letter).
    TimedOut {
        /// Why.
        error: String,
    },
    /// `RUNNING → ERROR` (dead letter): no handler or undecodable payload.
    Errored {
        /// Why.
        error: String,
    },
    /// `RUNNING → CANCELLED`: a requested cancel was delivered.
    Cancelled,
    /// `RUNNING → PENDING`, due now, attempt not counted: given back at shutdown.
    Released,
    /// `RUNNING → PENDING`, due after `delay`, attempt not counted, `error`
    /// recorded: given back by a worker that cannot run it yet (no handler
    /// for its name: an older binary in a rolling deploy). The transition
    /// is `Release`.
    Postponed {
        /// How long before it may be claimed again.
        delay: Duration,
        /// Why it was given back.
        error: String,
    },
}

impl Finish {
    /// The state this finish leads to.
    pub fn target(&self) -> TaskState {
        match self {
            Self::Completed => TaskState::Completed,
            Self::Retry { .. } | Self::Released | Self::Postponed { .. } => TaskState::Pending,
            Self::Failed { .. } => TaskState::Failed,
            Self::TimedOut { .. } => TaskState::Timeout,
            Self::Errored { .. } => TaskState::Error,
            Self::Cancelled => TaskState::Cancelled,
        }
    }

    /// Checks the finish against the ranges all stores share: a retry delay
    /// of at most [`crate::time::MAX_DURATION`]. Every store calls it for each
    /// item before writing, so one bad item is refused alone and never
    /// fails the rest of its batch (no neighbour harm).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field and its range.
    pub fn validate(&self) -> Result<()> {
        match self {
            Self::Retry { delay, .. } => check_duration("retry delay", *delay)?,
            Self::Postponed { delay, .. } => check_duration("postpone delay", *delay)?,
            _ => {}
        }
        Ok(())
    }

    /// The error text recorded, if any.
    pub fn error(&self) -> Option<&str> {
        match self {
            Self::Retry { error, .. }
            | Self::Postponed { error, .. }
            | Self::Failed { error }
            | Self::TimedOut { error }
            | Self::Errored { error } => Some(error),
            _ => None,
        }
    }
}

mod payload_json {
    use serde::{Deserialize, Deserializer, Serializer};

    // Show the payload as JSON when it is JSON, as a string otherwise.
    pub(super) fn serialize<S: Serializer>(p: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_slice::<serde_json::Value>(p) {
            Ok(v) => serde::Serialize::serialize(&v, s),
            Err(_) => s.serialize_str(&String::from_utf8_lossy(p)),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        serde_json::to_vec(&v).map_err(serde::de::Error::custom)
    }
}

mod opt_duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&crate::time::millis(*d)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
