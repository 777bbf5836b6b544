//! The runtime: claim loop, worker slots, heartbeats, housekeeping on the
//! elected leader, graceful shutdown.

mod attempt;
mod builder;
mod config;
mod heartbeat;
mod history;
mod housekeeping;
mod run;

use std::{fmt, future::Future, sync::Arc};

pub use builder::ExecutorBuilder;
pub use run::{RunningExecutor, ShutdownReport, StopHandle};

use crate::api::data::DataMap;
use crate::{
    Client, Namespace, Registry, Result, Submit, Submitted, WorkerId,
    storage::{ExecutorStorage, NewTask},
};
use config::Config;

/// A [`Client`] plus workers: claims due tasks and runs their handlers.
/// Cheap to clone; clones share one runtime.
///
/// ```
/// use reliable_executor::{Executor, Handler, MemoryStorage, TaskContext, TaskState, Submit, TaskBuilder, TaskOptions};
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let executor = Executor::builder(MemoryStorage::new())
///     .handler(Handler::new("greet", |name: String, _ctx: TaskContext| async move {
///         println!("hello, {name}");
///     }))
///     .build()
///     .await?;
/// let running = executor.start();
/// let id = TaskBuilder::new("greet", "world", TaskOptions::new()).submit(&executor).await?.id;
/// let record = executor.wait_for(&id, std::time::Duration::from_secs(5)).await?;
/// assert_eq!(record.state, TaskState::Completed);
/// running.shutdown().await?;
/// # Ok::<(), reliable_executor::Error>(()) })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Executor<S> {
    inner: Arc<Inner<S>>,
}

struct Inner<S> {
    client: Client<S>,
    registry: Arc<Registry>,
    worker: WorkerId,
    config: Config,
    data: Arc<DataMap>,
}

impl<S> Clone for Executor<S> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<S> fmt::Debug for Executor<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("worker", &self.inner.worker)
            .field("handlers", &self.inner.registry.names())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<S: ExecutorStorage> Executor<S> {
    /// Starts building an executor on `storage`.
    pub fn builder(storage: S) -> ExecutorBuilder<S> {
        ExecutorBuilder::new(storage)
    }

    pub(crate) fn from_parts(
        client: Client<S>,
        registry: Arc<Registry>,
        worker: WorkerId,
        config: Config,
        data: Arc<DataMap>,
    ) -> Self {
        Self { inner: Arc::new(Inner { client, registry, worker, config, data }) }
    }

    /// The values given with [`ExecutorBuilder::data`], for each attempt's context.
    pub(crate) fn data(&self) -> &Arc<DataMap> {
        &self.inner.data
    }

    /// The client side (the executor also derefs to it): submit, status,
    /// list, cancel, requeue, run now, counts, queues, schedules, history.
    pub fn client(&self) -> &Client<S> {
        &self.inner.client
    }

    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        self.inner.client.namespace()
    }

    /// The queues this executor serves and how it shares its claims among
    /// them.
    pub fn queues(&self) -> &crate::queue::QueueSet {
        &self.inner.config.queues
    }

    /// This process's worker id (owner of its leases).
    pub fn worker_id(&self) -> &WorkerId {
        &self.inner.worker
    }

    /// Attempts this process runs at once.
    pub fn concurrency(&self) -> usize {
        self.inner.config.concurrency
    }

    /// The handlers this executor runs.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Starts claiming and running tasks in the background.
    /// Call [`RunningExecutor::shutdown`] to stop gracefully.
    pub fn start(&self) -> RunningExecutor {
        run::start(self.clone())
    }

    /// Runs until `signal` resolves (or a handler calls
    /// [`crate::TaskContext::stop_executor`]), then shuts down gracefully: stops
    /// claiming, waits for running attempts up to the grace period, cancels
    /// the rest and gives their leases back. Nothing is lost, nothing is left
    /// `RUNNING`.
    ///
    /// # Errors
    /// Only if the runtime's background task itself failed.
    pub async fn run_until(&self, signal: impl Future<Output = ()>) -> Result<ShutdownReport> {
        let running = self.start();
        let stop = running.stop_handle();
        // A handler may stop the executor too (`TaskContext::stop_executor`).
        tokio::select! {
            () = signal => {}
            () = stop.stopped() => {}
        }
        running.shutdown().await
    }
}

/// An executor is also its namespace's [`Client`]: every client method
/// (status, list, cancel, requeue, run now, counts, queues and their
/// limits, schedules, history, `wait_for`, ...) is called on it directly,
/// with the bounds of the store's abilities, and [`Executor::client`] hands
/// the client out to keep or clone.
impl<S> std::ops::Deref for Executor<S> {
    type Target = Client<S>;

    fn deref(&self) -> &Client<S> {
        &self.inner.client
    }
}

impl<S: ExecutorStorage> Submit for Executor<S> {
    async fn submit_new(&self, task: NewTask) -> Result<Submitted> {
        self.inner.client.submit_new(task).await
    }

    async fn submit_many_new(&self, tasks: Vec<NewTask>) -> Vec<Result<Submitted>> {
        self.inner.client.submit_many_new(tasks).await
    }
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM: pass it to [`Executor::run_until`].
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! { () = ctrl_c => {}, () = term => {} }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}
