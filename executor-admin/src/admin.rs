//! [`Admin`]: what the routes act on, made from an executor or a client.

use std::fmt;

use executor_core::{
    Client, Executor, Registry, TaskOptions, WorkerId,
    client::DEFAULT_MAX_PAYLOAD,
    storage::{ExecutorStorage, RunNow},
};

/// Largest JSON body the admin API reads before answering 413: the core's
/// default payload limit plus room for the envelope (`name`, `id`, ...).
pub const DEFAULT_BODY_LIMIT: usize = DEFAULT_MAX_PAYLOAD + 16 * 1024;

/// The executor or client the admin routes act on, plus what the routes
/// can say about this process. Build it with `From`: an [`Executor`] gives
/// worker info (its id and handlers); a [`Client`] (a producer-only
/// process) reports no worker.
pub struct Admin<S> {
    pub(crate) client: Client<S>,
    pub(crate) worker: Option<WorkerInfo>,
    pub(crate) registry: Option<Registry>,
    pub(crate) body_limit: usize,
    pub(crate) read_only: bool,
}

/// This process as a worker.
#[derive(Clone, Debug)]
pub(crate) struct WorkerInfo {
    pub(crate) id: WorkerId,
    pub(crate) handlers: Vec<String>,
}

impl<S> Clone for Admin<S> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            worker: self.worker.clone(),
            registry: self.registry.clone(),
            body_limit: self.body_limit,
            read_only: self.read_only,
        }
    }
}

impl<S> fmt::Debug for Admin<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admin")
            .field("client", &self.client)
            .field("worker", &self.worker)
            .field("body_limit", &self.body_limit)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// What the admin needs of its store: the core [`executor_core::storage::Storage`] and every
/// ability one of its routes or pages uses (queues and limits, cron
/// schedules, history, workers, run now). Implemented for every such
/// store; serving the admin on a store without one of them is a compile
/// error, not a `501` at run time.
pub trait AdminStorage: ExecutorStorage + RunNow {}

impl<S: ExecutorStorage + RunNow> AdminStorage for S {}

impl<S: AdminStorage> From<Executor<S>> for Admin<S> {
    fn from(executor: Executor<S>) -> Self {
        let registry = executor.registry().clone();
        let handlers = registry.names().into_iter().map(str::to_owned).collect();
        Self {
            client: executor.client().clone(),
            worker: Some(WorkerInfo { id: executor.worker_id().clone(), handlers }),
            registry: Some(registry),
            body_limit: DEFAULT_BODY_LIMIT,
            read_only: false,
        }
    }
}

impl<S: AdminStorage> From<&Executor<S>> for Admin<S> {
    fn from(executor: &Executor<S>) -> Self {
        Self::from(executor.clone())
    }
}

impl<S: AdminStorage> From<Client<S>> for Admin<S> {
    fn from(client: Client<S>) -> Self {
        // The client keeps its registry private; the handlers linked into
        // this binary are the same inventory, read again for their defaults.
        let registry = Registry::collect([]).ok();
        Self { client, worker: None, registry, body_limit: DEFAULT_BODY_LIMIT, read_only: false }
    }
}

impl<S: AdminStorage> Admin<S> {
    /// Sets the largest request body the API reads (default
    /// [`DEFAULT_BODY_LIMIT`]); larger bodies get `413 payload_too_large`.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Read-only: every request other than `GET` and `HEAD` answers `403
    /// read_only` before it reaches a handler, and the dashboard shows no
    /// buttons or forms (a "read-only" badge instead). For a dashboard
    /// shown to people who may look but not act: support staff, a status
    /// screen. Off by default.
    ///
    /// ```
    /// use reliable_executor_admin::{Admin, admin_router};
    /// use executor_core::{Client, MemoryStorage, Namespace};
    ///
    /// # fn main() -> Result<(), executor_core::Error> {
    /// let client = Client::new(MemoryStorage::new(), Namespace::new("shop")?)?;
    /// let app: axum::Router = axum::Router::new().nest("/status", admin_router(Admin::from(client).read_only(true)));
    /// # let _ = app;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// Whether the routes refuse every change ([`Admin::read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The client the routes use.
    pub fn client(&self) -> &Client<S> {
        &self.client
    }

    /// The defaults of handler `name`, if this process knows it.
    pub(crate) fn defaults(&self, name: &str) -> Option<TaskOptions> {
        self.registry.as_ref()?.get(name).map(|h| h.default_options().clone())
    }
}
