//! [`SqlStorage`]: the one storage type of every SQL dialect, and the
//! core's `Storage` and ability traits for it, written once.

use std::time::Duration;

use executor_core::{
    ListQuery, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord, TaskState, Timestamp,
    WorkerId,
    query::{CancelOutcome, Retention, StateCounts, WorkerInfo},
    queue::{ClaimPlan, QueueInfo, QueueLimits},
    schedule::Schedule,
    storage::{
        Advance, Finish, Heartbeat, HistoryBucket, HistoryCount, HistoryStore, Leadership, Lease, NewTask,
        Presence, QueueControl, Reaped, RunNow, ScheduleEntry, ScheduleStore, Storage, TierStorage,
    },
};
use sqlx::Pool;

use crate::{
    SqlOptions, admin,
    dialect::{self, Dialect},
    finish, history, leader, query, queues, schedule, schema, tier,
};

/// A store on an SQL database of dialect `D`: `MySqlStorage` is
/// `SqlStorage<MySqlDialect>`, `PostgresStorage` is
/// `SqlStorage<PostgresDialect>`. Cheap to clone: clones share the pool
/// and whatever the dialect keeps (wake-ups, a listener, hints).
///
/// It implements the core `Storage` and every ability its dialect has;
/// what every dialect does alike (the group-committed finish) is done here
/// once, the rest by the dialect's parts ([`crate::dialect`]).
#[derive(Clone, Debug)]
pub struct SqlStorage<D> {
    dialect: D,
}

impl<D: Dialect> SqlStorage<D> {
    /// A storage of a dialect's state; a driver's options make one.
    pub fn new(dialect: D) -> Self {
        Self { dialect }
    }

    /// The dialect's state.
    pub fn dialect(&self) -> &D {
        &self.dialect
    }

    /// Connects with the default options and runs the migrations.
    ///
    /// # Errors
    /// As the driver's options' `connect`: an option outside its range, a
    /// server that does not answer (retryable), a bad URL or credentials, a
    /// TLS failure, a failed migration or an incomplete schema.
    pub async fn connect(url: &str) -> Result<Self> {
        SqlOptions::new().connect(url).await
    }

    /// A storage on an existing pool with the default options. Runs no
    /// migrations: call [[`SqlStorage::migrate`], or use [`SqlOptions::open`].
    pub fn from_pool(pool: Pool<D::Db>) -> Self {
        Self::new(D::from_pool(pool, SqlOptions::new()))
    }

    /// Settings for a storage other than the defaults.
    pub fn options() -> SqlOptions<D> {
        SqlOptions::new()
    }

    /// Creates or upgrades the schema, then checks it is complete. Safe when
    /// many processes start at once: one migrates under a lock of the
    /// executor's own, the others find it done.
    ///
    /// # Errors
    /// A failed or modified migration, the lock not granted within 10
    /// minutes, an incomplete schema, or a store failure.
    pub async fn migrate(&self) -> Result<()> {
        self.dialect.migrate().await
    }

    /// Deletes every task, the leadership, the workers' announcements, the
    /// cron schedules, the queue rows and the throughput history of `ns`,
    /// tasks in batches so no statement holds locks for long. Returns the
    /// number of tasks deleted. For tests and for retiring a namespace;
    /// running executors on `ns` lose their tasks.
    ///
    /// # Errors
    /// Store failures.
    pub async fn purge(&self, ns: &Namespace) -> Result<u64> {
        schema::purge(&self.dialect, ns).await
    }

    /// The pool, for operators' own queries and for the transactions that
    /// [`SqlStorage::submit_in`] joins. Close the storage with
    /// [`SqlStorage::close`], not `pool().close()`: the storage keeps
    /// connections it used (and PostgreSQL one for its listener), and the
    /// pool's `close` waits for them.
    pub fn pool(&self) -> &Pool<D::Db> {
        self.dialect.pool()
    }

    /// Stops what the storage runs in the background, gives back the
    /// connections it keeps and closes the pool (for every clone of the
    /// storage). Calls after it fail with a retryable "pool closed" error.
    pub async fn close(&self) {
        self.dialect.close().await;
    }

    /// Submits `task` inside the caller's transaction `conn`: the task
    /// exists, and can be claimed, only once that transaction commits;
    /// rolled back, it never existed.
    ///
    /// # Errors
    /// As `Storage::submit`; a failure inside the caller's transaction
    /// leaves the transaction for the caller to roll back.
    pub async fn submit_in<C>(&self, conn: &mut C, ns: &Namespace, task: NewTask) -> Result<Submitted>
    where
        C: ?Sized,
        D: dialect::SubmitIn<C>,
    {
        self.dialect.submit_in(conn, ns, task).await
    }
}

impl<D: Dialect> Storage for SqlStorage<D> {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.dialect.submit(ns, task).await
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        self.dialect.submit_many(ns, tasks).await
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.dialect.claim(ns, worker, plan, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.dialect.heartbeat(ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        finish::finish(self.dialect.finishes(), &self.dialect.finish_statements(), ns, lease, finish).await
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        finish::finish_many(&self.dialect.finish_statements(), ns, items).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        admin::cancel(&self.dialect, ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        query::get(&self.dialect, ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        query::list(&self.dialect, ns, query).await
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        admin::delete(&self.dialect, ns, id).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        schema::counts(&self.dialect, ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        admin::requeue(&self.dialect, ns, id).await
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        self.dialect.reap(ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        self.dialect.trim(ns, retention, limit).await
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        leader::acquire(&self.dialect, ns, worker, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        leader::release(&self.dialect, ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        leader::current(&self.dialect, ns).await
    }

    async fn now(&self, _ns: &Namespace) -> Result<Timestamp> {
        leader::now(&self.dialect).await
    }

    async fn max_payload(&self) -> Result<usize> {
        self.dialect.max_payload().await
    }

    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        self.dialect.wait_for_work(ns, queues, max_wait).await
    }
}

impl<D: Dialect> RunNow for SqlStorage<D> {
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        admin::run_now(&self.dialect, ns, id).await
    }
}

impl<D: Dialect> Presence for SqlStorage<D> {
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        leader::announce(&self.dialect, ns, worker, names, ttl).await
    }

    async fn workers(&self, ns: &Namespace) -> Result<Vec<WorkerInfo>> {
        leader::workers(&self.dialect, ns).await
    }
}

impl<D: Dialect + dialect::Tier> TierStorage for SqlStorage<D> {
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        tier::due_before(&self.dialect, ns, before, limit).await
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        tier::import(&self.dialect, ns, record).await
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        admin::remove_waiting(&self.dialect, ns, id, fence).await
    }
}

impl<D: Dialect + dialect::Queues> QueueControl for SqlStorage<D> {
    async fn pause_queue(&self, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
        queues::pause(&self.dialect, ns, queue, paused).await
    }

    async fn set_queue_limits(&self, ns: &Namespace, queue: &QueueName, limits: &QueueLimits) -> Result<()> {
        queues::set_limits(&self.dialect, ns, queue, limits).await
    }

    async fn queues(&self, ns: &Namespace) -> Result<Vec<QueueInfo>> {
        queues::list(&self.dialect, ns).await
    }
}

impl<D: Dialect> ScheduleStore for SqlStorage<D> {
    async fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> Result<()> {
        schedule::put(&self.dialect, ns, schedule).await
    }

    async fn schedules(&self, ns: &Namespace) -> Result<Vec<ScheduleEntry>> {
        schedule::all(&self.dialect, ns).await
    }

    async fn remove_schedule(&self, ns: &Namespace, name: &str) -> Result<bool> {
        schedule::remove(&self.dialect, ns, name).await
    }

    async fn pause_schedule(&self, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
        schedule::pause(&self.dialect, ns, name, paused).await
    }

    async fn advance_schedule(&self, ns: &Namespace, name: &str, advance: &Advance) -> Result<bool> {
        schedule::advance(&self.dialect, ns, name, advance).await
    }
}

impl<D: Dialect + dialect::History> HistoryStore for SqlStorage<D> {
    async fn add_history(&self, ns: &Namespace, counts: &[HistoryCount]) -> Result<()> {
        self.dialect.add_history(ns, counts).await
    }

    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<HistoryBucket>> {
        history::read(&self.dialect, ns, since).await
    }

    async fn trim_history(&self, ns: &Namespace, before: Timestamp) -> Result<u64> {
        history::trim(&self.dialect, ns, before).await
    }
}

impl<D, C> executor_core::storage::SubmitIn<C> for SqlStorage<D>
where
    D: Dialect + dialect::SubmitIn<C>,
    C: ?Sized + Send,
{
    async fn submit_in(&self, conn: &mut C, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.dialect.submit_in(conn, ns, task).await
    }
}
