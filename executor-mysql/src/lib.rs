//! MySQL 8 / MariaDB 10.6+ storage for `executor-core`, on `sqlx`.
//!
//! [`MySqlStorage`] keeps tasks in one InnoDB table (namespaces share it
//! through an `ns` column that leads every key), and leadership, workers'
//! announcements and cron schedules in one table each.
//! The schema is embedded ([`MySqlStorage::migrate`], run by
//! [`MySqlStorage::connect`] unless turned off, serialised across processes
//! by a server lock). Every state change is an autocommit statement
//! conditional on the task's state and fence; no transaction waits for the
//! client while it holds a lock, so a stopped or partitioned process holds
//! nothing others need (the one exception, the claim of a queue with
//! fleet-wide limits, is a transaction the server ends after 2 s idle). Claims pick candidates with `FOR UPDATE SKIP
//! LOCKED` and take them with one conditional UPDATE, so concurrent
//! claimers never hand a task out twice. Times come from the server's
//! clock. See `docs/mysql.md` for the schema, the query plans and the
//! wake-up latency.
//!
//! ```no_run
//! # async fn run() -> executor_core::Result<()> {
//! use executor_core::{Namespace, storage::Storage};
//! use reliable_executor_mysql::MySqlStorage;
//!
//! let storage = MySqlStorage::connect("mysql://root@127.0.0.1:3306/test").await?;
//! let counts = storage.counts(&Namespace::new("my-app")?).await?;
//! println!("{} tasks", counts.total());
//! # Ok(())
//! # }
//! ```

mod admin;
mod claim;
mod conn;
mod error;
mod finish;
mod history;
mod housekeeping;
mod leader;
mod limits;
mod options;
mod query;
mod queues;
mod row;
mod schedule;
mod sql;
mod storage;
mod submit;
mod tier;
mod wake;

use std::time::Duration;

use executor_core::{
    CancelOutcome, ClaimPlan, ListQuery, Namespace, Page, QueueName, Result, Retention, StateCounts,
    Submitted, TaskId, TaskRecord, TaskState, Timestamp, WorkerId,
    storage::{Finish, Heartbeat, Leadership, Lease, NewTask, Reaped, Storage, TierStorage},
};

pub use options::MySqlOptions;
/// The `sqlx` this driver is built on, for the transactions that
/// `submit_in` joins: a `sqlx::Transaction` of this version's MySQL driver.
pub use sqlx;
pub use storage::{MIGRATIONS_TABLE, MySqlStorage};

// Each method is the inherent one of the same name in the module of its
// section (`submit.rs`, `claim.rs`, ...); the `MySqlStorage::` path picks the
// inherent function, not this trait method. The optional abilities are
// implemented in their own modules (`queues.rs`, `schedule.rs`,
// `history.rs`, `admin.rs` for `RunNow`, `leader.rs` for `Presence`).
impl Storage for MySqlStorage {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        MySqlStorage::submit(self, ns, task).await
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        MySqlStorage::submit_many(self, ns, tasks).await
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        MySqlStorage::claim(self, ns, worker, plan, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        MySqlStorage::heartbeat(self, ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        MySqlStorage::finish(self, ns, lease, finish).await
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        MySqlStorage::finish_many(self, ns, items).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        MySqlStorage::cancel(self, ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        MySqlStorage::get(self, ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        MySqlStorage::list(self, ns, query).await
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        MySqlStorage::delete(self, ns, id).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        MySqlStorage::counts(self, ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        MySqlStorage::requeue(self, ns, id).await
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        MySqlStorage::reap(self, ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        MySqlStorage::trim(self, ns, retention, limit).await
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        MySqlStorage::acquire_leadership(self, ns, worker, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        MySqlStorage::release_leadership(self, ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        MySqlStorage::leader(self, ns).await
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        MySqlStorage::now(self, ns).await
    }

    async fn max_payload(&self) -> Result<usize> {
        MySqlStorage::max_payload(self).await
    }

    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        MySqlStorage::wait_for_work(self, ns, queues, max_wait).await
    }
}

impl TierStorage for MySqlStorage {
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        MySqlStorage::due_before(self, ns, before, limit).await
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        MySqlStorage::import(self, ns, record).await
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        MySqlStorage::remove(self, ns, id, fence).await
    }
}

impl executor_core::storage::SubmitIn<sqlx::MySqlConnection> for MySqlStorage {
    async fn submit_in(
        &self,
        conn: &mut sqlx::MySqlConnection,
        ns: &Namespace,
        task: NewTask,
    ) -> Result<Submitted> {
        MySqlStorage::submit_in(self, conn, ns, task).await
    }
}
