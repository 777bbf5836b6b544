//! What a dialect implements: one trait per part of a store, each in the
//! driver module of the same name (`submit.rs` implements [`Submit`],
//! `claim.rs` [`Claim`], ...). [`crate::SqlStorage`] puts them together
//! into the core's `Storage` and the ability traits, once for every
//! dialect; a part the SQL core does itself (the finish, the list cursor)
//! is not here.
//!
//! Each method means what the core trait method of the same name means
//! (`executor_core::storage`); the docs say only what differs.

use std::{future::Future, time::Duration};

use executor_core::{
    CancelOutcome, ClaimPlan, ListQuery, Namespace, Page, QueueInfo, QueueLimits, QueueName, Result,
    Retention, StateCounts, Submitted, TaskId, TaskRecord, Timestamp, WorkerId, WorkerInfo,
    schedule::Schedule,
    storage::{
        Advance, Heartbeat, HistoryBucket, HistoryCount, Leadership, Lease, NewTask, Reaped, ScheduleEntry,
    },
};
use sqlx::{Database, Pool};

use crate::finish::{FinishGroup, FinishStatements};

/// A dialect: its database, its state (what a storage of it holds, cheap to
/// clone), and the parts every store has. `storage.rs` of the driver
/// implements it.
pub trait Dialect:
    Clone
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
    + Submit
    + Claim
    + Wait
    + Housekeeping
    + Query
    + Admin
    + Leader
{
    /// The sqlx database.
    type Db: Database;
    /// The driver's options (`MySqlOptions`, `PostgresOptions`).
    type Options: Default;

    /// Connects with `options` and, unless they turn it off, migrates.
    fn connect(options: Self::Options, url: &str) -> impl Future<Output = Result<Self>> + Send;

    /// A dialect on an existing pool with `options`; runs nothing.
    fn from_pool(pool: Pool<Self::Db>, options: Self::Options) -> Self;

    /// The pool the storage's connections come from.
    fn pool(&self) -> &Pool<Self::Db>;

    /// Creates or upgrades the schema, then checks it is complete.
    fn migrate(&self) -> impl Future<Output = Result<()>> + Send;

    /// Deletes everything of `ns`; returns the number of tasks deleted.
    fn purge(&self, ns: &Namespace) -> impl Future<Output = Result<u64>> + Send;

    /// Stops what the dialect runs in the background (a listener), gives
    /// back the kept connections and closes the pool.
    fn close(&self) -> impl Future<Output = ()> + Send;

    /// The server's clock.
    fn now(&self, ns: &Namespace) -> impl Future<Output = Result<Timestamp>> + Send;

    /// The largest payload this store takes.
    fn max_payload(&self) -> impl Future<Output = Result<usize>> + Send;

    /// Where concurrent finishes of this process share a batch.
    fn finishes(&self) -> &FinishGroup;

    /// This dialect's finish statements (`finish.rs`), on this storage's
    /// connections.
    fn finish_statements(&self) -> impl FinishStatements;
}

/// Creating tasks (`submit.rs`).
pub trait Submit: Sized {
    /// As `Storage::submit`.
    fn submit(&self, ns: &Namespace, task: NewTask) -> impl Future<Output = Result<Submitted>> + Send;

    /// As `Storage::submit_many`.
    fn submit_many(
        &self,
        ns: &Namespace,
        tasks: Vec<NewTask>,
    ) -> impl Future<Output = Result<Vec<Result<Submitted>>>> + Send;
}

/// Creating a task inside the caller's transaction (`submit.rs`).
pub trait SubmitIn<C: ?Sized> {
    /// As `SubmitIn::submit_in`: the task is written by `conn`'s
    /// transaction, visible and claimable only once it commits.
    fn submit_in(
        &self,
        conn: &mut C,
        ns: &Namespace,
        task: NewTask,
    ) -> impl Future<Output = Result<Submitted>> + Send;
}

/// Taking due tasks and keeping their leases (`claim.rs`).
pub trait Claim {
    /// As `Storage::claim`.
    fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> impl Future<Output = Result<Vec<TaskRecord>>> + Send;

    /// As `Storage::claim_queues`.
    fn claim_queues(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> impl Future<Output = Result<Vec<TaskRecord>>> + Send;

    /// As `Storage::heartbeat`.
    fn heartbeat(
        &self,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> impl Future<Output = Result<Heartbeat>> + Send;
}

/// Waiting for work (`wake.rs`).
pub trait Wait {
    /// As `Storage::wait_for_work`.
    fn wait_for_work(&self, ns: &Namespace, max_wait: Duration) -> impl Future<Output = Result<()>> + Send;

    /// As `Storage::wait_for_queues`.
    fn wait_for_queues(
        &self,
        ns: &Namespace,
        queues: &[QueueName],
        max_wait: Duration,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// The leader's upkeep (`housekeeping.rs`).
pub trait Housekeeping {
    /// As `Storage::reap`.
    fn reap(&self, ns: &Namespace, limit: usize) -> impl Future<Output = Result<Reaped>> + Send;

    /// As `Storage::trim`.
    fn trim(
        &self,
        ns: &Namespace,
        retention: &Retention,
        limit: usize,
    ) -> impl Future<Output = Result<u64>> + Send;
}

/// Reads for operators and producers (`query.rs`).
pub trait Query {
    /// As `Storage::get`.
    fn get(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<Option<TaskRecord>>> + Send;

    /// As `Storage::list`.
    fn list(&self, ns: &Namespace, query: ListQuery) -> impl Future<Output = Result<Page>> + Send;

    /// As `Storage::counts`.
    fn counts(&self, ns: &Namespace) -> impl Future<Output = Result<StateCounts>> + Send;
}

/// An operator's changes to one task (`admin.rs`).
pub trait Admin {
    /// As `Storage::cancel`.
    fn cancel(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<CancelOutcome>> + Send;

    /// As `Storage::requeue`.
    fn requeue(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<()>> + Send;

    /// As `Storage::delete`.
    fn delete(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<bool>> + Send;

    /// As `RunNow::run_now`.
    fn run_now(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<()>> + Send;
}

/// Leadership of the housekeeping, and the workers' announcements
/// (`leader.rs`).
pub trait Leader {
    /// As `Storage::acquire_leadership`.
    fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<Leadership>>> + Send;

    /// As `Storage::release_leadership`.
    fn release_leadership(
        &self,
        ns: &Namespace,
        term: &Leadership,
    ) -> impl Future<Output = Result<()>> + Send;

    /// As `Storage::leader`.
    fn leader(&self, ns: &Namespace) -> impl Future<Output = Result<Option<Leadership>>> + Send;

    /// As `Presence::announce`.
    fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> impl Future<Output = Result<()>> + Send;

    /// As `Presence::workers`.
    fn workers(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<WorkerInfo>>> + Send;
}

/// Moves between a hot and a cold tier (`tier.rs`).
pub trait Tier {
    /// As `TierStorage::due_before`.
    fn due_before(
        &self,
        ns: &Namespace,
        before: Timestamp,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TaskRecord>>> + Send;

    /// As `TierStorage::import`.
    fn import(&self, ns: &Namespace, record: TaskRecord) -> impl Future<Output = Result<bool>> + Send;

    /// As `TierStorage::remove`.
    fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> impl Future<Output = Result<bool>> + Send;
}

/// Queue controls and fleet-wide limits (`queues.rs`).
pub trait Queues {
    /// As `QueueControl::pause_queue`.
    fn pause_queue(
        &self,
        ns: &Namespace,
        queue: &QueueName,
        paused: bool,
    ) -> impl Future<Output = Result<()>> + Send;

    /// As `QueueControl::set_queue_limits`.
    fn set_queue_limits(
        &self,
        ns: &Namespace,
        queue: &QueueName,
        limits: &QueueLimits,
    ) -> impl Future<Output = Result<()>> + Send;

    /// As `QueueControl::queues`.
    fn queues(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<QueueInfo>>> + Send;
}

/// Cron schedules (`schedule.rs`).
pub trait Schedules {
    /// As `ScheduleStore::put_schedule`.
    fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> impl Future<Output = Result<()>> + Send;

    /// As `ScheduleStore::schedules`.
    fn schedules(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<ScheduleEntry>>> + Send;

    /// As `ScheduleStore::remove_schedule`.
    fn remove_schedule(&self, ns: &Namespace, name: &str) -> impl Future<Output = Result<bool>> + Send;

    /// As `ScheduleStore::pause_schedule`.
    fn pause_schedule(
        &self,
        ns: &Namespace,
        name: &str,
        paused: bool,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// As `ScheduleStore::advance_schedule`.
    fn advance_schedule(
        &self,
        ns: &Namespace,
        name: &str,
        advance: &Advance,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// Throughput history (`history.rs`).
pub trait History {
    /// As `HistoryStore::add_history`.
    fn add_history(&self, ns: &Namespace, counts: &[HistoryCount])
    -> impl Future<Output = Result<()>> + Send;

    /// As `HistoryStore::history`.
    fn history(
        &self,
        ns: &Namespace,
        since: Timestamp,
    ) -> impl Future<Output = Result<Vec<HistoryBucket>>> + Send;

    /// As `HistoryStore::trim_history`.
    fn trim_history(&self, ns: &Namespace, before: Timestamp) -> impl Future<Output = Result<u64>> + Send;
}
