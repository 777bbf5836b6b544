//! Submitting and querying tasks: [`Client`], the [`Submit`] trait the
//! generated helpers call, the typed [`TaskBuilder`], and the limits of a
//! submit ([`DEFAULT_MAX_PAYLOAD`], [`SUBMIT_BATCH`]).

use std::{
    fmt,
    future::Future,
    sync::Arc,
    time::{Duration, SystemTime},
};

use serde::Serialize;

use crate::{
    Error, ListQuery, Namespace, Page, QueueName, Registry, Result, RetryPolicy, Submitted, TaskId,
    TaskOptions, TaskRecord, Timestamp,
    api::listener::Listeners,
    history::HistoryBucket,
    metrics as m,
    query::{CancelOutcome, StateCounts, WorkerInfo},
    queue::{QueueInfo, QueueLimits},
    resend::Resend,
    storage::{
        Debounce, Due, HistoryStore, NewTask, Presence, QueueControl, RunNow, ScheduleStore, Storage,
        SubmitMode,
    },
};

/// Default payload limit: 1 MiB of JSON. The one setting is
/// [`crate::ExecutorBuilder::max_payload`] (or [`Client::max_payload`]); a
/// store's own hard limit ([`Storage::max_payload`]) applies when lower.
pub const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;

/// Anything tasks can be submitted through: a [`Client`] or an
/// [`crate::Executor`]. The helpers `#[reliable_task]` generates take `&impl Submit`.
pub trait Submit: Send + Sync {
    /// Validates and stores a task.
    ///
    /// # Errors
    /// Validation errors, [`Error::DuplicateId`], store failures.
    fn submit_new(&self, task: NewTask) -> impl Future<Output = Result<Submitted>> + Send;

    /// Validates and stores many tasks, with the same checks, metrics and
    /// listeners as [`Submit::submit_new`]; one answer per task, in order.
    /// Each task succeeds or fails on its own; a store failure fails the
    /// tasks of the batch it hit, not the others.
    fn submit_many_new(&self, tasks: Vec<NewTask>) -> impl Future<Output = Vec<Result<Submitted>>> + Send {
        async move {
            let mut out = Vec::with_capacity(tasks.len());
            for task in tasks {
                out.push(self.submit_new(task).await);
            }
            out
        }
    }
}

/// Most tasks sent to the store in one `submit_many` call; larger batches
/// are split.
pub const SUBMIT_BATCH: usize = 500;

/// A handle for producers: submit, status, list, cancel, requeue, counts.
/// Runs no handlers, so a web process can enqueue while workers run elsewhere.
/// Cheap to clone.
pub struct Client<S> {
    inner: Arc<ClientInner<S>>,
}

struct ClientInner<S> {
    storage: Arc<S>,
    namespace: Namespace,
    registry: Option<Arc<Registry>>,
    max_payload: usize,
    listeners: Listeners,
    resend: Resend,
}

impl<S> Clone for Client<S> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<S> fmt::Debug for Client<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("namespace", &self.inner.namespace)
            .field("checks_names", &self.inner.registry.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: Storage> Client<S> {
    /// A client on `namespace` that checks task names against every
    /// `#[reliable_task]` linked into this binary.
    ///
    /// # Errors
    /// [`Error::DuplicateHandler`] if two handlers share a name.
    pub fn new(storage: S, namespace: Namespace) -> Result<Self> {
        let registry = Arc::new(Registry::collect([])?);
        Ok(Self::from_parts(
            Arc::new(storage),
            namespace,
            Some(registry),
            DEFAULT_MAX_PAYLOAD,
            Listeners::default(),
            Resend::default(),
        ))
    }

    /// A client that submits any task name, for producers that do not link
    /// the handlers (they run in another service).
    pub fn without_name_check(storage: S, namespace: Namespace) -> Self {
        Self::from_parts(
            Arc::new(storage),
            namespace,
            None,
            DEFAULT_MAX_PAYLOAD,
            Listeners::default(),
            Resend::default(),
        )
    }

    /// Sets the largest payload accepted at submit, in bytes of JSON
    /// (default [`DEFAULT_MAX_PAYLOAD`]); the store's own limit
    /// ([`Storage::max_payload`]) applies when it is lower. The same setting
    /// as [`crate::ExecutorBuilder::max_payload`], for a producer-only client.
    #[must_use]
    pub fn max_payload(self, bytes: usize) -> Self {
        let inner = &self.inner;
        Self::from_parts(
            Arc::clone(&inner.storage),
            inner.namespace.clone(),
            inner.registry.clone(),
            bytes,
            inner.listeners.clone(),
            inner.resend,
        )
    }

    /// How a submit whose answer was lost ([`Error::OutcomeUnknown`]: the
    /// store may have stored the task) is sent again: as the same submit
    /// ([`NewTask::resend`]: same id and nonce, so a store answers
    /// `Created` whether or not the lost try stored it), up to `tries`
    /// sends in all (0 counts as 1: send once and return the error), the
    /// first resend after `pause`, each next one after twice the pause
    /// before (at most 10 s). Default: 3 tries, 100 ms
    /// ([`crate::resend::DEFAULT_SUBMIT_TRIES`], [`crate::resend::DEFAULT_SUBMIT_PAUSE`]).
    /// Only such submits are sent again, for [`Submit::submit_new`],
    /// [`Submit::submit_many_new`] and the typed helpers that call them;
    /// a submit that failed before it reached the store returns its error
    /// at once, and [`Client::submit_in`] is never sent again (its
    /// transaction is the caller's). The same setting as
    /// [`crate::ExecutorBuilder::submit_retry`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use reliable_executor::{Client, MemoryStorage, Namespace};
    ///
    /// let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("app")?)
    ///     .submit_retry(5, Duration::from_millis(200));
    /// # drop(client);
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    #[must_use]
    pub fn submit_retry(self, tries: u32, pause: Duration) -> Self {
        let inner = &self.inner;
        Self::from_parts(
            Arc::clone(&inner.storage),
            inner.namespace.clone(),
            inner.registry.clone(),
            inner.max_payload,
            inner.listeners.clone(),
            Resend::new(tries, pause),
        )
    }

    pub(crate) fn from_parts(
        storage: Arc<S>,
        namespace: Namespace,
        registry: Option<Arc<Registry>>,
        max_payload: usize,
        listeners: Listeners,
        resend: Resend,
    ) -> Self {
        Self { inner: Arc::new(ClientInner { storage, namespace, registry, max_payload, listeners, resend }) }
    }

    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.inner.namespace
    }

    /// The handlers submits are checked against; `None` for a client built
    /// with [`Client::without_name_check`].
    pub fn registry(&self) -> Option<&Registry> {
        self.inner.registry.as_deref()
    }

    /// The store.
    pub fn storage(&self) -> &S {
        &self.inner.storage
    }

    /// Submits by name with a JSON payload, using the handler's defaults
    /// (the HTTP admin API's path).
    ///
    /// # Errors
    /// [`Error::UnknownTask`] when no handler has this name (unless this
    /// client skips the check), and whatever [`Submit::submit_new`] returns.
    pub async fn submit_json(&self, name: &str, payload: serde_json::Value) -> Result<Submitted> {
        let defaults = match &self.inner.registry {
            Some(r) => r
                .get(name)
                .map(|h| h.default_options().clone())
                .ok_or_else(|| Error::UnknownTask(name.to_owned()))?,
            None => TaskOptions::new(),
        };
        let task = TaskBuilder::new(name.to_owned(), payload, defaults).into_new_task()?;
        self.submit_new(task).await
    }

    /// The task's record, or `None` if it does not exist (or was trimmed).
    ///
    /// # Errors
    /// Store failures.
    pub async fn status(&self, id: &TaskId) -> Result<Option<TaskRecord>> {
        self.inner.storage.get(&self.inner.namespace, id).await
    }

    /// Cancels a waiting task, or asks a running one to stop.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::IllegalTransition`] for a finished task.
    pub async fn cancel(&self, id: &TaskId) -> Result<CancelOutcome> {
        let outcome = self.inner.storage.cancel(&self.inner.namespace, id).await?;
        if outcome == CancelOutcome::Cancelled {
            self.inner.listeners.cancelled(id);
        }
        Ok(outcome)
    }

    /// Moves a dead-lettered task back to `PENDING`, due now.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::IllegalTransition`] unless dead-lettered.
    pub async fn requeue(&self, id: &TaskId) -> Result<()> {
        self.inner.storage.requeue(&self.inner.namespace, id).await
    }

    /// Deletes one task in any state, readable or not; answers whether it
    /// existed. The way out for a record that no longer parses (a page
    /// lists those in [`Page::unreadable`]). A worker still running a
    /// deleted task has its result refused.
    ///
    /// # Errors
    /// Store failures.
    pub async fn delete(&self, id: &TaskId) -> Result<bool> {
        self.inner.storage.delete(&self.inner.namespace, id).await
    }

    /// One page of tasks in a state, of one name with [`ListQuery::name`].
    ///
    /// # Errors
    /// [`Error::Invalid`] for a page size outside 1..=1000, a name no task
    /// can have ([`ListQuery::validate`]) or a foreign cursor.
    pub async fn list(&self, query: ListQuery) -> Result<Page> {
        query.validate()?;
        self.inner.storage.list(&self.inner.namespace, query).await
    }

    /// Tasks by state.
    ///
    /// # Errors
    /// Store failures.
    pub async fn counts(&self) -> Result<StateCounts> {
        self.inner.storage.counts(&self.inner.namespace).await
    }

    /// Waits until the task reaches a terminal state and returns its record.
    /// Polls the store with a growing interval (5 ms to 250 ms).
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::Timeout`] after `timeout`, store failures.
    pub async fn wait_for(&self, id: &TaskId, timeout: Duration) -> Result<TaskRecord> {
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let record = self.status(id).await?.ok_or_else(|| Error::NotFound(id.clone()))?;
            if record.state.is_terminal() {
                return Ok(record);
            }
            if started.elapsed() >= timeout {
                return Err(Error::Timeout(timeout));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    pub(crate) fn storage_arc(&self) -> &Arc<S> {
        &self.inner.storage
    }

    pub(crate) fn listeners(&self) -> &Listeners {
        &self.inner.listeners
    }

    /// The payload limit in force: the lower of this client's setting and
    /// the store's own.
    ///
    /// # Errors
    /// Store failures, when the store reads its limit from the server.
    pub async fn payload_limit(&self) -> Result<usize> {
        Ok(self.inner.max_payload.min(self.inner.storage.max_payload().await?))
    }

    fn check(&self, task: &NewTask, max_payload: usize) -> Result<()> {
        task.validate()?;
        if let SubmitMode::Debounce(d) = &task.mode
            && d.max_wait.is_some_and(|w| w < d.window)
        {
            return Err(Error::invalid("debounce", "max_wait is shorter than the window"));
        }
        if let Some(registry) = &self.inner.registry
            && registry.get(&task.name).is_none()
        {
            return Err(Error::UnknownTask(task.name.clone()));
        }
        if task.payload.len() > max_payload {
            return Err(Error::PayloadTooLarge { size: task.payload.len(), limit: max_payload });
        }
        Ok(())
    }
}

/// Cron schedules, on a store that keeps them.
impl<S: ScheduleStore> Client<S> {
    /// The cron schedules of this namespace: add, replace, pause, resume,
    /// remove, list. See [`crate::schedule`].
    pub fn schedules(&self) -> crate::schedule::Schedules<S> {
        crate::schedule::Schedules::new(self.clone())
    }
}

/// Throughput history, on a store that keeps it.
impl<S: HistoryStore> Client<S> {
    /// The throughput history of this namespace: every bucket (a minute,
    /// a task name, attempts succeeded and failed) whose minute is at or
    /// after `since`, ordered by minute then name, on the store's clock.
    /// Executors add to it every `history_interval` (default 5 s), so the
    /// current minute fills in as they flush.
    ///
    /// ```
    /// use reliable_executor::{Client, MemoryStorage, Namespace, Timestamp, storage::{HistoryCount, HistoryStore}};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> reliable_executor::Result<()> {
    /// let store = MemoryStorage::new();
    /// let ns = Namespace::new("my-app")?;
    /// store.add_history(&ns, &[HistoryCount::new("send_mail", 3, 1)]).await?;
    /// let client = Client::new(store, ns)?;
    /// let hour_ago = Timestamp::now_system().saturating_sub(std::time::Duration::from_secs(3_600));
    /// let buckets = client.history(hour_ago).await?;
    /// assert_eq!((buckets[0].succeeded, buckets[0].failed), (3, 1));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// Store failures; [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn history(&self, since: crate::Timestamp) -> Result<Vec<HistoryBucket>> {
        self.inner.storage.history(&self.inner.namespace, since).await
    }
}

/// Worker presence, on a store that keeps it.
impl<S: Presence> Client<S> {
    /// The workers of this namespace that announced themselves within the
    /// last three `counts_interval`s (default 10 s each), with the task
    /// names each runs; empty on a store that keeps no announcements. The
    /// leader compares them and warns (and sets
    /// `reliable_executor_handler_sets`) when they differ.
    ///
    /// # Errors
    /// Store failures.
    pub async fn workers(&self) -> Result<Vec<WorkerInfo>> {
        self.inner.storage.workers(&self.inner.namespace).await
    }
}

/// "Run now", on a store that can move a due time.
impl<S: RunNow> Client<S> {
    /// Makes a waiting task due now: an operator's "run now" for a delayed
    /// task, a retry waiting out its backoff or a debounced task. A task
    /// already due keeps its place.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reliable_executor::{Client, MemoryStorage, Namespace, TaskBuilder, TaskId, TaskOptions, TaskState};
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("app")?);
    /// TaskBuilder::new("report", 7, TaskOptions::new())
    ///     .id("report-7")
    ///     .delay(Duration::from_secs(3_600))
    ///     .submit(&client)
    ///     .await?;
    /// let id = TaskId::new("report-7")?;
    /// client.run_now(&id).await?;
    /// let task = client.status(&id).await?.ok_or("not found")?;
    /// assert!(task.due_at <= task.created_at.saturating_add(Duration::from_secs(1)));
    /// assert_eq!(task.state, TaskState::Created);
    /// # Ok::<(), Box<dyn std::error::Error>>(()) })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::IllegalTransition`] unless `CREATED` or
    /// `PENDING`; [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn run_now(&self, id: &TaskId) -> Result<()> {
        self.inner.storage.run_now(&self.inner.namespace, id).await
    }
}

/// Queue controls and limits, on a store that has them.
impl<S: QueueControl> Client<S> {
    /// Every queue of this namespace that has waiting tasks or is paused:
    /// depth, due tasks, oldest due time, paused.
    ///
    /// # Errors
    /// Store failures; [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn queues(&self) -> Result<Vec<QueueInfo>> {
        self.inner.storage.queues(&self.inner.namespace).await
    }

    /// Pauses `queue` on every process of this namespace: from the next
    /// claim round on no task of it starts; running attempts finish, and
    /// its tasks wait in order until [`Client::resume_queue`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), reliable_executor::Error> {
    /// use reliable_executor::{Client, MemoryStorage, Namespace};
    ///
    /// let client = Client::new(MemoryStorage::new(), Namespace::new("docs-pause")?)?;
    /// client.pause_queue("emails").await?;
    /// assert!(client.queues().await?.iter().any(|q| q.queue.as_str() == "emails" && q.paused));
    /// client.resume_queue("emails").await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad queue name; store failures;
    /// [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn pause_queue(&self, queue: impl Into<String>) -> Result<()> {
        let queue = QueueName::new(queue)?;
        self.inner.storage.pause_queue(&self.inner.namespace, &queue, true).await
    }

    /// Resumes a paused queue: its tasks are claimed again from the next
    /// claim round on.
    ///
    /// # Errors
    /// As [`Client::pause_queue`].
    pub async fn resume_queue(&self, queue: impl Into<String>) -> Result<()> {
        let queue = QueueName::new(queue)?;
        self.inner.storage.pause_queue(&self.inner.namespace, &queue, false).await
    }

    /// Sets `queue`'s fleet-wide limits, enforced by the store inside every
    /// claim of every process: at most `concurrency` of its tasks running
    /// at once, at most `rate` starts per interval (token bucket).
    /// [`QueueLimits::default`] removes them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), reliable_executor::Error> {
    /// use reliable_executor::{Client, MemoryStorage, Namespace, queue::{QueueLimits, RateLimit}};
    ///
    /// let client = Client::new(MemoryStorage::new(), Namespace::new("docs-limits")?)?;
    /// // At most 4 report builds at once, and 50 payment calls a second, fleet-wide.
    /// client.set_queue_limits("reports", QueueLimits::new().concurrency(4)).await?;
    /// client.set_queue_limits("payments", QueueLimits::new().rate(RateLimit::per_second(50)?)).await?;
    /// let reports = client.queues().await?.into_iter().find(|q| q.queue.as_str() == "reports");
    /// assert_eq!(reports.map(|q| q.limits.concurrency), Some(Some(4)));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad queue name or limit; store failures;
    /// [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn set_queue_limits(&self, queue: impl Into<String>, limits: QueueLimits) -> Result<()> {
        let queue = QueueName::new(queue)?;
        limits.validate()?;
        self.inner.storage.set_queue_limits(&self.inner.namespace, &queue, &limits).await
    }
}

impl<S: Storage> Client<S> {
    /// Submits `task` inside the caller's database transaction: `conn` is
    /// the connection of an open transaction of the same database
    /// (`&mut *tx` for a `sqlx::Transaction`). The task exists once the
    /// transaction commits, and never if it rolls back; on PostgreSQL the
    /// commit also wakes idle workers in every process. Checked as
    /// [`Submit::submit_new`] checks (handler name, payload size, options)
    /// before anything is sent. Metrics and listeners count the submit when
    /// the INSERT ran: a rollback afterwards undoes the task, not the count.
    /// `executor_postgres::PostgresStorage` and `executor_mysql::MySqlStorage`
    /// have this ability (docs/postgres.md shows a whole request handler).
    ///
    /// # Errors
    /// As [`Submit::submit_new`]; the transaction is the caller's to roll
    /// back after an error.
    pub async fn submit_in<C>(&self, conn: &mut C, task: NewTask) -> Result<Submitted>
    where
        C: ?Sized + Send,
        S: crate::storage::SubmitIn<C>,
    {
        self.check(&task, self.payload_limit().await?)?;
        let name = task.name.clone();
        let submitted = self.inner.storage.submit_in(conn, &self.inner.namespace, task).await?;
        self.submitted(&name, &submitted);
        Ok(submitted)
    }
}

impl<S: Storage> Submit for Client<S> {
    /// Checks the task, then sends it; a submit whose answer was lost is
    /// sent again as [`Client::submit_retry`] says.
    async fn submit_new(&self, task: NewTask) -> Result<Submitted> {
        self.check(&task, self.payload_limit().await?)?;
        let name = task.name.clone();
        let inner = &self.inner;
        let submitted = inner.resend.submit(&*inner.storage, &inner.namespace, task).await?;
        self.submitted(&name, &submitted);
        Ok(submitted)
    }

    /// Checks every task, then sends the valid ones in batches of
    /// [`SUBMIT_BATCH`] through the store's `submit_many`; the tasks of a
    /// batch whose answers were lost are sent again as
    /// [`Client::submit_retry`] says.
    async fn submit_many_new(&self, tasks: Vec<NewTask>) -> Vec<Result<Submitted>> {
        let limit = match self.payload_limit().await {
            Ok(limit) => limit,
            Err(e) => {
                let (reason, retryable) = (e.to_string(), e.is_retryable());
                return tasks.iter().map(|_| Err(Error::storage(reason.clone(), retryable))).collect();
            }
        };
        let mut out: Vec<Option<Result<Submitted>>> = Vec::with_capacity(tasks.len());
        let mut valid: Vec<(usize, NewTask)> = Vec::new();
        for (i, task) in tasks.into_iter().enumerate() {
            match self.check(&task, limit) {
                Ok(()) => {
                    out.push(None);
                    valid.push((i, task));
                }
                Err(e) => out.push(Some(Err(e))),
            }
        }
        let mut valid = valid.into_iter().peekable();
        while valid.peek().is_some() {
            let (slots, batch): (Vec<usize>, Vec<NewTask>) = valid.by_ref().take(SUBMIT_BATCH).unzip();
            let names: Vec<String> = batch.iter().map(|t| t.name.clone()).collect();
            let inner = &self.inner;
            let answers = inner.resend.submit_many(&*inner.storage, &inner.namespace, batch).await;
            for ((i, name), answer) in slots.into_iter().zip(names).zip(answers) {
                if let Ok(submitted) = &answer {
                    self.submitted(&name, submitted);
                }
                out[i] = Some(answer);
            }
        }
        out.into_iter()
            .map(|a| a.unwrap_or_else(|| Err(Error::storage("no answer for a task", false))))
            .collect()
    }
}

impl<S: Storage> Client<S> {
    /// Submits many tasks at once: the same name, payload and option checks,
    /// `submitted` metric and `on_submitted` listeners as a single submit,
    /// one answer per task in order (created, existing, debounced, or its
    /// error), any number of tasks (sent in batches of [`SUBMIT_BATCH`]).
    /// The typed `name::submit_many` helpers of `#[reliable_task]` call it.
    ///
    /// ```
    /// use reliable_executor::{Client, MemoryStorage, Namespace, SubmitOutcome, TaskBuilder, TaskOptions};
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("app")?);
    /// let tasks = (0..3)
    ///     .map(|n| TaskBuilder::new("resize", n, TaskOptions::new()).id(format!("img-{n}")).into_new_task())
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// let answers = client.submit_many(tasks).await;
    /// assert!(answers.iter().all(|a| matches!(a, Ok(s) if s.outcome == SubmitOutcome::Created)));
    /// # Ok::<(), reliable_executor::Error>(()) })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn submit_many(&self, tasks: impl IntoIterator<Item = NewTask>) -> Vec<Result<Submitted>> {
        self.submit_many_new(tasks.into_iter().collect()).await
    }

    fn submitted(&self, name: &str, submitted: &Submitted) {
        m::submitted(name, submitted.outcome);
        self.inner.listeners.submitted(&submitted.id, name, submitted.outcome);
    }
}

/// Submits the tasks that were built as one batch; a task that did not
/// build (bad id, payload that does not encode) keeps its own error. Used
/// by the `submit_many` helpers `#[reliable_task]` generates.
#[doc(hidden)]
pub async fn submit_built<C: Submit>(
    client: &C,
    built: impl IntoIterator<Item = Result<NewTask>>,
) -> Vec<Result<Submitted>> {
    let mut out: Vec<Option<Result<Submitted>>> = Vec::new();
    let mut tasks = Vec::new();
    let mut slots = Vec::new();
    for task in built {
        match task {
            Ok(task) => {
                slots.push(out.len());
                out.push(None);
                tasks.push(task);
            }
            Err(e) => out.push(Some(Err(e))),
        }
    }
    for (i, answer) in slots.into_iter().zip(client.submit_many_new(tasks).await) {
        out[i] = Some(answer);
    }
    out.into_iter().map(|a| a.unwrap_or_else(|| Err(Error::storage("no answer for a task", false)))).collect()
}

/// A submit with per-task overrides of the handler's defaults. The typed
/// `with(..)` helper of each `#[reliable_task]` returns one.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::{TaskBuilder, TaskOptions, storage::Due};
///
/// let task = TaskBuilder::new("process_order", 7u64, TaskOptions::new())
///     .id("order_7_pay")
///     .delay(Duration::from_secs(30))
///     .retry_limit(5)
///     .into_new_task()?;
/// assert_eq!(task.max_attempts, 6);
/// assert_eq!(task.due, Due::After(Duration::from_secs(30)));
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Debug)]
#[must_use = "a task builder does nothing until `.submit(&client)`"]
pub struct TaskBuilder<P> {
    name: String,
    payload: P,
    options: TaskOptions,
    id: Option<String>,
    due: Due,
    mode: SubmitMode,
    max_wait: Option<Duration>,
    queue: Option<String>,
    retry_overridden: bool,
    limit_overridden: bool,
}

impl<P: Serialize> TaskBuilder<P> {
    /// A submit of `name` with `payload` and the handler's `defaults`.
    pub fn new(name: impl Into<String>, payload: P, defaults: TaskOptions) -> Self {
        Self {
            name: name.into(),
            payload,
            options: defaults,
            id: None,
            due: Due::Now,
            mode: SubmitMode::Plain,
            max_wait: None,
            queue: None,
            retry_overridden: false,
            limit_overridden: false,
        }
    }

    /// Uses this id (a business key) instead of a generated UUID v7.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Due after `delay`.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.due = Due::After(delay);
        self
    }

    /// Due at `at`.
    pub fn run_at(mut self, at: SystemTime) -> Self {
        self.due = Due::At(Timestamp::from_system(at));
        self
    }

    /// Overrides the retry limit.
    pub fn retry_limit(mut self, n: u32) -> Self {
        self.options.retry_limit = n;
        self.limit_overridden = true;
        self
    }

    /// Overrides the retry policy (not a custom function: that is code).
    /// Levels set the retry limit to their count unless this submit sets
    /// [`TaskBuilder::retry_limit`]; a limit below their count is refused.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        if let RetryPolicy::Levels { levels } = &policy
            && !self.limit_overridden
        {
            self.options.retry_limit = u32::try_from(levels.len()).unwrap_or(u32::MAX);
        }
        self.options.retry = policy;
        self.retry_overridden = true;
        self
    }

    /// Overrides `max_duration`.
    pub fn max_duration(mut self, d: Duration) -> Self {
        self.options.max_duration = Some(d);
        self
    }

    /// Overrides the per-attempt timeout.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.options.timeout = Some(d);
        self
    }

    /// Puts the task in `queue` instead of the handler's (checked when the
    /// task is built).
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Overrides the priority within the queue: 0 (the default) to
    /// [`crate::queue::MAX_PRIORITY`], higher claimed first.
    pub fn priority(mut self, priority: u8) -> Self {
        self.options.priority = priority;
        self
    }

    /// A duplicate id returns the existing task instead of an error.
    pub fn idempotent(mut self) -> Self {
        self.mode = SubmitMode::Idempotent;
        self
    }

    /// Debounce under `key`: repeats before the task runs push it to
    /// `now + window` and replace its payload.
    pub fn debounce(mut self, key: impl Into<String>, window: Duration) -> Self {
        self.mode = SubmitMode::Debounce(Debounce::new(key, window));
        self
    }

    /// Caps how long debouncing may postpone the task (from the first
    /// submit). Before or after [`TaskBuilder::debounce`], the same; without
    /// it, [`TaskBuilder::into_new_task`] refuses the submit.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// The task as a store receives it.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad id or option; [`Error::Encode`] when the
    /// payload does not serialize.
    pub fn into_new_task(mut self) -> Result<NewTask> {
        if let Some(q) = self.queue.take() {
            self.options.queue = QueueName::new(q)?;
        }
        self.options.validate()?;
        match (&mut self.mode, self.max_wait) {
            (SubmitMode::Debounce(d), Some(w)) => d.max_wait = Some(w),
            (_, Some(_)) => {
                return Err(Error::invalid(
                    "max_wait",
                    "applies to a debounced submit: add .debounce(key, window)",
                ));
            }
            _ => {}
        }
        let payload = serde_json::to_vec(&self.payload).map_err(Error::Encode)?;
        let mut task = match self.id {
            Some(id) => NewTask::new(TaskId::new(id)?, self.name, payload),
            None => NewTask::with_generated_id(self.name, payload),
        };
        task.due = self.due;
        task.max_attempts = self.options.max_attempts();
        task.max_duration = self.options.max_duration;
        task.timeout = self.options.timeout;
        task.queue = self.options.queue;
        task.priority = self.options.priority;
        // The handler's default policy applies unless overridden, so a
        // custom default keeps working.
        task.retry = self.retry_overridden.then_some(self.options.retry);
        task.mode = self.mode;
        Ok(task)
    }

    /// Submits and answers the task's id and what the submit did: created
    /// it, found it (an idempotent repeat) or moved it (a debounced repeat).
    ///
    /// # Errors
    /// As [`TaskBuilder::into_new_task`] and [`Submit::submit_new`].
    pub async fn submit<C: Submit>(self, client: &C) -> Result<Submitted> {
        let task = self.into_new_task()?;
        client.submit_new(task).await
    }

    /// Submits inside the caller's database transaction (see
    /// [`Client::submit_in`]): the task exists if and only if the
    /// transaction commits.
    ///
    /// # Errors
    /// As [`TaskBuilder::into_new_task`] and [`Client::submit_in`].
    pub async fn submit_in<S, C>(self, client: &Client<S>, conn: &mut C) -> Result<Submitted>
    where
        S: crate::storage::SubmitIn<C>,
        C: ?Sized + Send,
    {
        let task = self.into_new_task()?;
        client.submit_in(conn, task).await
    }
}
