//! [`ExecutorBuilder`]: every setting of the runtime, validated at `build`.

use std::{fmt, sync::Arc, time::Duration};

use super::{Executor, config::Config};
use crate::{
    Client, Error, Handler, Listener, Namespace, QueueName, Registry, Result, WorkerId,
    api::{data::DataMap, listener::Listeners},
    client::DEFAULT_MAX_PAYLOAD,
    query::Retention,
    queue::QueueSet,
    resend::Resend,
    storage::ExecutorStorage,
};

/// Builds an [`Executor`]. Start with [`Executor::builder`].
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::{Executor, MemoryStorage};
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let executor = Executor::builder(MemoryStorage::new())
///     .namespace("my-app")
///     .concurrency(64)
///     .lease(Duration::from_secs(30))
///     .build()
///     .await?;
/// assert_eq!(executor.namespace().as_str(), "my-app");
/// # Ok::<(), reliable_executor::Error>(()) })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "call `.build().await` to get the executor"]
pub struct ExecutorBuilder<S> {
    storage: S,
    namespace: String,
    worker: Option<String>,
    config: Config,
    handlers: Vec<Handler>,
    expected: Vec<String>,
    listeners: Vec<Arc<dyn Listener>>,
    max_payload: usize,
    resend: Resend,
    data: DataMap,
    queues: Option<Result<QueueSet>>,
}

impl<S> fmt::Debug for ExecutorBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorBuilder")
            .field("namespace", &self.namespace)
            .field("config", &self.config)
            .field("handlers", &self.handlers)
            .finish_non_exhaustive()
    }
}

impl<S: ExecutorStorage> ExecutorBuilder<S> {
    pub(crate) fn new(storage: S) -> Self {
        Self {
            storage,
            namespace: Namespace::default().as_str().to_owned(),
            worker: None,
            config: Config::default(),
            handlers: Vec::new(),
            expected: Vec::new(),
            listeners: Vec::new(),
            queues: None,
            max_payload: DEFAULT_MAX_PAYLOAD,
            resend: Resend::default(),
            data: DataMap::default(),
        }
    }

    /// The namespace shared by every process of one application: its tasks,
    /// leader and counts. Default: the binary's name
    /// ([`Namespace::of_this_binary`](crate::Namespace::of_this_binary)),
    /// so two services on one store never share a queue by accident; set
    /// it when several binaries (a web front end and its workers) share one.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// A stable worker id for this process (default: generated per executor).
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker = Some(id.into());
        self
    }

    /// Attempts run at once in this process (default 16). Claiming stops
    /// while every slot is busy. A slot is free again when its handler
    /// returns, while the result is still being written (at most
    /// `concurrency` writes at once), so the store may show up to twice
    /// this many of the process's tasks `RUNNING`.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.config.concurrency = n;
        self
    }

    /// Most tasks claimed in one store call (default 64); never more than free slots.
    pub fn claim_batch(mut self, n: usize) -> Self {
        self.config.claim_batch = n;
        self
    }

    /// How long a claim owns a task without a heartbeat (default 30 s). A
    /// crashed worker's tasks are recovered this long after its last heartbeat.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.config.lease = lease;
        self
    }

    /// How often leases are renewed (default 10 s; at most half the lease).
    pub fn heartbeat_interval(mut self, every: Duration) -> Self {
        self.config.heartbeat = every;
        self
    }

    /// Longest wait between claims while idle (default 5 s); the store's
    /// wake-up usually ends the wait much sooner.
    pub fn max_idle_wait(mut self, wait: Duration) -> Self {
        self.config.max_idle_wait = wait;
        self
    }

    /// How long shutdown waits for running attempts before cancelling them
    /// and giving their leases back (default 30 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.config.shutdown_grace = grace;
        self
    }

    /// How long a handler may keep running after its cancel was requested
    /// before it is aborted (default 5 s).
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.config.cancel_grace = grace;
        self
    }

    /// How often the leader samples the task counts into gauges and
    /// compares the handler sets of the namespace's workers, and every
    /// worker announces its handler names (default 10 s; 1 ms to 1 day).
    /// An announcement lapses after three intervals and one lease without
    /// another. A store whose counts or queue figures take long to read (a
    /// SQL store scanning millions of retained tasks) is sampled less often:
    /// a sample that took `t` is not repeated within `20 × t`, so sampling
    /// takes at most 5 % of one connection's time.
    pub fn counts_interval(mut self, every: Duration) -> Self {
        self.config.counts_every = every;
        self
    }

    /// How often the leader reaps expired leases (default 1 s).
    pub fn housekeeping_interval(mut self, every: Duration) -> Self {
        self.config.housekeeping = every;
        self
    }

    /// How long finished tasks are kept (default: completed a day, dead letter a week).
    pub fn retention(mut self, retention: Retention) -> Self {
        self.config.retention = retention;
        self
    }

    /// How often the leader trims by retention when it has caught up
    /// (default 60 s). While a trim comes back full (a backlog), the leader
    /// trims again at every housekeeping tick instead.
    pub fn trim_interval(mut self, every: Duration) -> Self {
        self.config.trim_every = every;
        self
    }

    /// How often this process adds the attempts that finished since the
    /// last time to the store's throughput history (default 5 s; 1 ms to a
    /// day): one [`HistoryStore::add_history`](crate::storage::HistoryStore::add_history) call per interval, never one per
    /// task, and a last one at shutdown. The dashboard's throughput chart
    /// and `GET /api/history` read it. See
    /// [`ExecutorBuilder::without_history`] to turn it off.
    pub fn history_interval(mut self, every: Duration) -> Self {
        self.config.history_every = Some(every);
        self
    }

    /// Counts no history in this process: no [`HistoryStore::add_history`](crate::storage::HistoryStore::add_history)
    /// calls. Other processes of the namespace may still write it, and the
    /// leader still trims it.
    pub fn without_history(mut self) -> Self {
        self.config.history_every = None;
        self
    }

    /// How long the leader keeps throughput history (default 25 hours, so
    /// the last day can always be drawn; 1 minute to 400 days). Older
    /// minutes are deleted with [`HistoryStore::trim_history`](crate::storage::HistoryStore::trim_history) at every
    /// [`ExecutorBuilder::trim_interval`].
    pub fn history_keep(mut self, keep: Duration) -> Self {
        self.config.history_keep = keep;
        self
    }

    /// Most finished tasks one trim call deletes (default 1,000; 1 to
    /// 100,000). The leader repeats full calls within
    /// [`ExecutorBuilder::housekeeping_budget`].
    pub fn trim_batch(mut self, n: usize) -> Self {
        self.config.trim_batch = n;
        self
    }

    /// Most expired leases one reap call recovers (default 256; 1 to
    /// 100,000). The leader repeats full calls within
    /// [`ExecutorBuilder::housekeeping_budget`].
    pub fn reap_batch(mut self, n: usize) -> Self {
        self.config.reap_batch = n;
        self
    }

    /// How long a task whose name no worker can run waits before it ends
    /// `ERROR` (default 1 hour: longer than a rolling deploy). Until then a
    /// worker without the handler gives it back to the queue with a growing
    /// delay (a quarter of the time it has been unknown, 1 s to 10 s),
    /// attempt not counted, and counts it in
    /// `reliable_executor_unknown_task_total`; a worker that has the handler
    /// runs it. `Duration::ZERO` dead-letters at once.
    pub fn unknown_task_grace(mut self, grace: Duration) -> Self {
        self.config.unknown_task_grace = grace;
        self
    }

    /// How late a cron tick may be found and still fire under
    /// [`crate::schedule::Misfire::None`] (default 60 s): a tick found later
    /// (no leader was alive, the store was down) passes without a task.
    pub fn misfire_grace(mut self, grace: Duration) -> Self {
        self.config.misfire_grace = grace;
        self
    }

    /// How long the leader may spend per housekeeping tick repeating reap
    /// and trim calls that come back full (default 500 ms; 1 ms to 1 hour):
    /// retention and recovery keep up with any rate the store processes,
    /// and a huge backlog is worked off over several ticks instead of in
    /// one long pause.
    pub fn housekeeping_budget(mut self, budget: Duration) -> Self {
        self.config.housekeeping_budget = budget;
        self
    }

    /// Largest payload accepted at submit, in bytes of JSON (default 1 MiB).
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// How a submit whose answer was lost ([`crate::Error::OutcomeUnknown`])
    /// is sent again, as the same submit: up to `tries` sends in all (0
    /// counts as 1), the first resend after `pause`, each next after twice
    /// the pause before (default 3 tries, 100 ms). See
    /// [`Client::submit_retry`].
    pub fn submit_retry(mut self, tries: u32, pause: Duration) -> Self {
        self.resend = Resend::new(tries, pause);
        self
    }

    /// Registers a handler from a closure, beside every `#[reliable_task]`.
    pub fn handler(mut self, handler: Handler) -> Self {
        self.handlers.push(handler);
        self
    }

    /// Fails `build` unless a handler with each of these names is
    /// registered: catches a handler crate the linker dropped.
    pub fn expect_handlers<I, N>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.expected.extend(names.into_iter().map(Into::into));
        self
    }

    /// Gives handlers a value of the application's state (a database pool,
    /// an HTTP client, configuration): a handler receives it by taking a
    /// [`Data<T>`](crate::Data) parameter. Call once per type; a second value
    /// of the same type replaces the first. `build()` refuses to start when
    /// a handler takes a type that was not given.
    ///
    /// ```
    /// use reliable_executor::{Executor, MemoryStorage};
    ///
    /// #[derive(Clone)]
    /// struct Config { api_url: String }
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let executor = Executor::builder(MemoryStorage::new())
    ///     .data(Config { api_url: "https://api.example.com".into() })
    ///     .data(std::sync::Arc::new(String::from("shared")))
    ///     .build()
    ///     .await?;
    /// # Ok::<(), reliable_executor::Error>(()) })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.data.insert(value);
        self
    }

    /// Serves exactly these queues, weighted: while every one has due
    /// tasks, each gets `weight / sum of weights` of the claims (weights
    /// 1..=1,000); one with nothing due gives its part to the others, and
    /// none starves. Without this (or [`ExecutorBuilder::strict_queues`]),
    /// an executor serves the default queue and every queue its handlers'
    /// attributes name, weight 1 each. A process serving only some queues
    /// claims nothing else: in a mixed fleet, each worker serves the queues
    /// whose handlers it has.
    ///
    /// ```
    /// use reliable_executor::{Executor, MemoryStorage};
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let executor = Executor::builder(MemoryStorage::new())
    ///     .queues([("critical", 6), ("default", 3), ("low", 1)])
    ///     .build()
    ///     .await?;
    /// assert_eq!(executor.queues().queues().count(), 3);
    /// # Ok::<(), reliable_executor::Error>(()) })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A bad name, a weight outside 1..=1,000, a queue named twice or more
    /// than 64 queues fail [`ExecutorBuilder::build`].
    pub fn queues<Q>(mut self, queues: impl IntoIterator<Item = (Q, u32)>) -> Self
    where
        Q: TryInto<QueueName>,
        Error: From<Q::Error>,
    {
        self.queues = Some(QueueSet::weighted(queues));
        self
    }

    /// Serves exactly these queues in strict order: a claim takes from a
    /// queue only when every queue before it has nothing due (a queue late
    /// in the list can starve while earlier ones are busy, by design).
    /// Errors as [`ExecutorBuilder::queues`].
    pub fn strict_queues<Q>(mut self, queues: impl IntoIterator<Item = Q>) -> Self
    where
        Q: TryInto<QueueName>,
        Error: From<Q::Error>,
    {
        self.queues = Some(QueueSet::strict(queues));
        self
    }

    /// Adds a listener.
    pub fn listener(mut self, listener: impl Listener) -> Self {
        self.listeners.push(Arc::new(listener));
        self
    }

    /// Validates the settings and collects the handlers.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad namespace, a setting outside its range
    /// (the error names the option and the range: `concurrency` 1..=100,000,
    /// batches 1..=100,000, `lease` 100 ms..=1 day, `heartbeat_interval` at
    /// most half the lease, other intervals and graces up to a day, retention
    /// up to [`crate::time::MAX_DURATION`]) or a handler default out of range;
    /// [`Error::DuplicateHandler`] when two handlers share a name;
    /// [`Error::UnknownTask`] when an expected handler is missing;
    /// [`Error::MissingData`] when a handler takes a `Data<T>` that was not
    /// given with [`ExecutorBuilder::data`].
    pub async fn build(self) -> Result<Executor<S>> {
        let namespace = Namespace::new(self.namespace)?;
        let worker = match self.worker {
            Some(id) => WorkerId::new(id)?,
            None => WorkerId::generate(),
        };
        self.config.validate()?;
        let registry = Registry::collect(self.handlers)?;
        registry.check_data(&self.data)?;
        if let Some(missing) = self.expected.iter().find(|n| registry.get(n).is_none()) {
            tracing::error!(registered = ?registry.names(), "an expected handler is not registered");
            return Err(Error::UnknownTask(missing.clone()));
        }
        if registry.is_empty() {
            tracing::warn!(
                namespace = %namespace,
                "executor built with no handlers: every claimed task will end in ERROR. If your \
                 #[reliable_task] functions live in another crate, reference it (`use my_handlers as _;`)"
            );
        }
        let mut config = self.config;
        config.queues = match self.queues {
            Some(set) => set?,
            None => {
                let mut set = QueueSet::default_only();
                for name in registry.names() {
                    if let Some(h) = registry.get(name) {
                        set.ensure(&h.default_options().queue);
                    }
                }
                set
            }
        };
        crate::metrics::describe();
        let registry = Arc::new(registry);
        let listeners = Listeners::new(self.listeners);
        let client = Client::from_parts(
            Arc::new(self.storage),
            namespace,
            Some(Arc::clone(&registry)),
            self.max_payload,
            listeners,
            self.resend,
        );
        Ok(Executor::from_parts(client, registry, worker, config, Arc::new(self.data)))
    }
}
