//! The driver contract: what a store implements and what it is handed.
//!
//! Applications name [`Storage`] only as a bound (it is in the
//! [`prelude`](crate::prelude)); the rest of this module is for the authors
//! of storage crates: the core [`Storage`] trait, one trait per optional
//! ability ([`QueueControl`], [`ScheduleStore`], [`HistoryStore`],
//! [`RunNow`], [`Presence`], [`TierStorage`], [`SubmitIn`]), the records
//! they receive and return ([`NewTask`], [`Lease`], [`Finish`],
//! [`Heartbeat`], [`Reaped`], [`Leadership`], [`ScheduleEntry`],
//! [`Advance`], [`HistoryCount`], [`HistoryBucket`]), the shared range checks, the
//! transition table as data ([`Transition`]), and [`GroupCommit`] for
//! batching finishes.
//!
//! Every method that changes a task is one atomic step in the store (one Lua
//! script, one SQL statement or transaction, one critical section). The
//! conformance suite in `reliable_executor::testing` (feature `testing`) checks
//! each method against the state diagram and the invariants; a new store
//! passes it before it is called done.

mod group_commit;

use std::{future::Future, time::Duration};

use crate::{
    ListQuery, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord, TaskState, Timestamp,
    WorkerId,
    query::{CancelOutcome, Retention, StateCounts, WorkerInfo},
    queue::{ClaimPlan, QueueInfo, QueueLimits},
    schedule::Schedule,
};
// Documented in their own public modules; listed here for store authors.
pub use crate::records::{
    state::Transition,
    task::{Debounce, Due, Finish, Lease, MAX_FENCE, NewTask, SubmitMode},
};
#[doc(no_inline)]
pub use crate::{
    attempt_log::{attempt_log_from_column, decode_attempt_log},
    history::{HISTORY_MINUTE, HistoryBucket, HistoryCount, MAX_HISTORY_COUNT, check_history, minute_of},
    schedule::{Advance, ScheduleEntry},
    time::{check_duration, check_instant},
};
pub use group_commit::{GroupCommit, MAX_GROUP};

/// A store of tasks: Redis, MySQL, memory, or a combination.
///
/// Methods return `impl Future + Send` so backends write plain `async fn`.
/// All times are the store's clock.
pub trait Storage: Send + Sync + 'static {
    /// Stores a new task, or applies an idempotent or debounced submit.
    ///
    /// A store keeps the task's [`NewTask::nonce`] with the task it
    /// creates, so that the same submit sent again ([`NewTask::resend`],
    /// after its answer was lost) answers `Created` instead of
    /// `DuplicateId` (an idempotent one may answer `Existing`), and the
    /// task exists once.
    ///
    /// # Errors
    /// [`crate::Error::DuplicateId`] for a plain submit of a taken id;
    /// [`crate::Error::PayloadTooLarge`] or [`crate::Error::Invalid`] for
    /// input the store cannot hold; [`crate::Error::OutcomeUnknown`] when
    /// the request was (or may have been) sent and its answer was lost, so
    /// the task may or may not be stored; a store failure before anything
    /// was sent is an [`crate::Error::Storage`].
    fn submit(&self, ns: &Namespace, task: NewTask) -> impl Future<Output = Result<Submitted>> + Send;

    /// Submits many tasks in as few round trips as the store allows. Each
    /// task succeeds or fails on its own; a task whose request was sent and
    /// whose answer was lost gets its own [`crate::Error::OutcomeUnknown`].
    ///
    /// # Errors
    /// The outer error only when the store could not be reached at all.
    fn submit_many(
        &self,
        ns: &Namespace,
        tasks: Vec<NewTask>,
    ) -> impl Future<Output = Result<Vec<Result<Submitted>>>> + Send {
        async move {
            let mut out = Vec::with_capacity(tasks.len());
            for task in tasks {
                out.push(self.submit(ns, task).await);
            }
            Ok(out)
        }
    }

    /// Claims due tasks (`CREATED`/`PENDING` with `due_at <= now`) for
    /// `worker` as `plan` says: up to each share's quota from its queue, in
    /// order, then the rest of `plan.limit` from the same queues in the same
    /// order. A paused queue gives nothing. Within a queue: highest priority
    /// first, then earliest due, then id. Each claimed task becomes `RUNNING`
    /// with its fence and attempts incremented, `started_at = now` and
    /// `lease_until = now + lease`. One atomic step per batch, so concurrent
    /// claimers never get the same task and nothing is claimed before it is
    /// due. [`ClaimPlan::default_queue`] is the plan of the default queue
    /// alone.
    ///
    /// # Errors
    /// Store failures only.
    fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> impl Future<Output = Result<Vec<TaskRecord>>> + Send;

    /// Extends every lease in `leases` to `now + lease` and reports the ones
    /// that are lost (fence moved on, task no longer `RUNNING`) and the ones
    /// whose cancel was requested. One round trip for all of them.
    ///
    /// # Errors
    /// Store failures only.
    fn heartbeat(
        &self,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> impl Future<Output = Result<Heartbeat>> + Send;

    /// Ends an attempt. Refused with [`crate::Error::StaleFence`] unless the
    /// task is `RUNNING` with this lease's fence (a late attempt never
    /// overwrites a newer one). Returns the
    /// new state.
    ///
    /// # Errors
    /// `StaleFence`; store failures.
    fn finish(
        &self,
        ns: &Namespace,
        lease: &Lease,
        finish: Finish,
    ) -> impl Future<Output = Result<TaskState>> + Send;

    /// Ends many attempts in as few round trips as the store allows.
    ///
    /// # Errors
    /// The outer error only when the store could not be reached at all.
    fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> impl Future<Output = Result<Vec<Result<TaskState>>>> + Send {
        async move {
            let mut out = Vec::with_capacity(items.len());
            for (lease, finish) in items {
                out.push(self.finish(ns, &lease, finish).await);
            }
            Ok(out)
        }
    }

    /// Cancels a waiting task at once, or asks a running one to stop (the
    /// worker learns it at its next heartbeat).
    ///
    /// # Errors
    /// [`crate::Error::NotFound`]; [`crate::Error::IllegalTransition`] for a
    /// finished task.
    fn cancel(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<CancelOutcome>> + Send;

    /// Reads one task.
    ///
    /// # Errors
    /// Store failures; [`crate::Error::Corrupt`] for a record that does not parse.
    fn get(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<Option<TaskRecord>>> + Send;

    /// One page of the tasks in `state`. Following `next` until it is `None`
    /// visits every task that stayed in the state exactly once.
    ///
    /// # Errors
    /// Store failures; [`crate::Error::Invalid`] for a cursor the store did not make.
    fn list(&self, ns: &Namespace, query: ListQuery) -> impl Future<Output = Result<Page>> + Send;

    /// Deletes one task in any state, readable or not; returns whether it
    /// existed. The way out for a record that no longer parses. A worker
    /// still running a deleted task has its finish refused as stale, and
    /// its debounce key, counts and indexes go with it.
    ///
    /// # Errors
    /// Store failures.
    fn delete(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<bool>> + Send;

    /// The number of tasks in each state.
    ///
    /// # Errors
    /// Store failures.
    fn counts(&self, ns: &Namespace) -> impl Future<Output = Result<StateCounts>> + Send;

    /// Moves a dead-lettered task (`FAILED`, `TIMEOUT`, `ERROR`) back to
    /// `PENDING`, due now, with its attempts reset.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`]; [`crate::Error::IllegalTransition`] for any
    /// other state.
    fn requeue(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<()>> + Send;

    /// Recovers up to `limit` tasks whose lease expired (their worker died):
    /// `TIMEOUT` when past the deadline, `FAILED` when no attempts are left,
    /// else `PENDING` due now. The fence grows so the old worker's late
    /// writes are refused.
    ///
    /// # Errors
    /// Store failures.
    fn reap(&self, ns: &Namespace, limit: usize) -> impl Future<Output = Result<Reaped>> + Send;

    /// Deletes up to `limit` finished tasks older than the retention policy
    /// allows; returns how many went.
    ///
    /// # Errors
    /// Store failures.
    fn trim(
        &self,
        ns: &Namespace,
        retention: &Retention,
        limit: usize,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Becomes leader of the namespace's housekeeping for `ttl`, or renews
    /// leadership already held by `worker`. `None` while another worker leads.
    /// Every new term gets a larger fencing token.
    ///
    /// # Errors
    /// Store failures.
    fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<Leadership>>> + Send;

    /// Gives leadership up, if `term` still holds it.
    ///
    /// # Errors
    /// Store failures.
    fn release_leadership(
        &self,
        ns: &Namespace,
        term: &Leadership,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The current leader, if any.
    ///
    /// # Errors
    /// Store failures.
    fn leader(&self, ns: &Namespace) -> impl Future<Output = Result<Option<Leadership>>> + Send;

    /// The store's clock, for decisions that must not depend on a worker's
    /// clock (Redis `TIME`, MySQL `NOW(3)`). Required: a default on the
    /// worker's clock would break the store-clock rule silently.
    ///
    /// # Errors
    /// Store failures.
    fn now(&self, ns: &Namespace) -> impl Future<Output = Result<Timestamp>> + Send;

    /// The largest payload, in bytes of JSON, this store can hold: its own
    /// hard limit (a Redis string's 512 MiB; MySQL's `max_allowed_packet`
    /// less the rest of the row). [`crate::Client`] and the executor apply
    /// the lower of it and their `max_payload` setting, and the store
    /// refuses a larger payload at `submit` and `import` with
    /// [`crate::Error::PayloadTooLarge`] whoever sends it.
    ///
    /// # Errors
    /// Store failures, when the limit has to be read from the server.
    fn max_payload(&self) -> impl Future<Output = Result<usize>> + Send;

    /// Store-specific upkeep, run by the elected leader at every housekeeping
    /// tick beside reaping and trimming (e.g. promoting tasks between tiers).
    /// The default does nothing.
    ///
    /// # Errors
    /// Store failures; the leader logs them and tries again next tick.
    fn housekeeping(&self, ns: &Namespace) -> impl Future<Output = Result<()>> + Send {
        let _ = ns;
        async { Ok(()) }
    }

    /// Resolves when work may have become due in `queues` of `ns`, or after
    /// `max_wait`, whichever is first: the wake-up that lets an idle claimer
    /// of those queues start a due task within milliseconds without busy
    /// polling. Due tasks of other queues, of paused ones and of ones at
    /// their concurrency limit do not end the wait at once (they would make
    /// the claimer spin), though any wake-up may: spurious wake-ups are
    /// allowed.
    ///
    /// # Errors
    /// Store failures.
    fn wait_for_work(
        &self,
        ns: &Namespace,
        queues: &[QueueName],
        max_wait: Duration,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// Queue controls and fleet-wide limits: pause and resume a queue, set its
/// concurrency and rate limits, read every queue's depth and state. A store
/// with it passes `queue_conformance_tests!` and
/// `queue_limit_conformance_tests!` (feature `testing`); what controls
/// queues ([`crate::Client::pause_queue`], the admin's queue routes, `rex
/// queues`) asks for it in its bounds.
pub trait QueueControl: Storage {
    /// Pauses (`true`) or resumes (`false`) `queue` for every process: from
    /// the next claim on, no claim takes its tasks until it is resumed;
    /// attempts running finish. Kept in the store, whether or not the queue
    /// has tasks. Resuming a queue that is not paused does nothing.
    ///
    /// # Errors
    /// Store failures.
    fn pause_queue(
        &self,
        ns: &Namespace,
        queue: &QueueName,
        paused: bool,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Sets `queue`'s fleet-wide limits, replacing the ones it
    /// had; [`QueueLimits::default`] removes them. From the next claim on,
    /// every claim takes no more of the queue's tasks than its concurrency
    /// limit leaves (tasks `RUNNING` in the store count until they finish
    /// or are reaped) and than whole tokens are left in its rate bucket
    /// (refilled on the store's clock; a queue that had no rate starts with
    /// a full bucket, one that had keeps its tokens, capped at the new
    /// burst), in the same atomic step that claims. The caller has
    /// validated `limits`.
    ///
    /// # Errors
    /// Store failures.
    fn set_queue_limits(
        &self,
        ns: &Namespace,
        queue: &QueueName,
        limits: &QueueLimits,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Every queue of `ns` that has waiting or running tasks, is paused or
    /// has limits, by name: its depth, how many are due, its oldest due
    /// time, whether paused, its running tasks and its limits.
    ///
    /// # Errors
    /// Store failures.
    fn queues(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<QueueInfo>>> + Send;
}

/// Moving a waiting task's due time to now ("run now"). A store with it
/// passes `run_now_conformance_tests!` (feature `testing`).
pub trait RunNow: Storage {
    /// Makes a waiting task (`CREATED` or `PENDING`) due now on the store's
    /// clock, as an operator's "run now": a delayed task, a retry waiting
    /// out its backoff or a debounced task starts at the next claim (a
    /// paused or limited queue still holds it back). A task already due
    /// keeps its due time and its place. Attempts, payload and options are
    /// unchanged; workers waiting for work are woken.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`]; [`crate::Error::IllegalTransition`] for a
    /// task that is not waiting (running, finished, dead-lettered: requeue
    /// those).
    fn run_now(&self, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<()>> + Send;
}

/// Worker presence: which processes serve a namespace and with which
/// handlers. Every running executor announces itself, and the leader
/// compares the handler sets it finds.
pub trait Presence: Storage {
    /// Records that `worker` runs the task names `names` in `ns`, until `ttl`
    /// passes without another call, on the store's clock. Every running
    /// executor calls it periodically, and the leader compares what
    /// [`Presence::workers`] answers, warning when processes with different
    /// handler sets share a namespace.
    ///
    /// # Errors
    /// Store failures; the executor logs them and tries again.
    fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The workers of `ns` whose announcement has not lapsed, in any order;
    /// lapsed ones may be deleted on the way, and one that does not parse
    /// (edited by hand) is left out.
    ///
    /// # Errors
    /// Store failures.
    fn workers(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<WorkerInfo>>> + Send;
}

/// Cron schedules kept in the store, advanced by the elected leader under
/// its fencing token. A store with it passes `schedule_conformance_tests!`
/// (feature `testing`).
pub trait ScheduleStore: Storage {
    /// Stores `schedule` under its name in `ns`, replacing the definition of
    /// one already there and keeping its state (paused, cursor, fence, last
    /// task); a new one starts unpaused with its cursor at the store's now,
    /// so no tick before it was added fires. The caller has validated it.
    ///
    /// # Errors
    /// Store failures.
    fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> impl Future<Output = Result<()>> + Send;

    /// Every schedule of `ns`, by name. One whose stored form does not parse
    /// (edited by hand) is left out, with a warning.
    ///
    /// # Errors
    /// Store failures.
    fn schedules(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<ScheduleEntry>>> + Send;

    /// Deletes schedule `name`; whether it existed. Tasks it submitted stay.
    ///
    /// # Errors
    /// Store failures.
    fn remove_schedule(&self, ns: &Namespace, name: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Pauses (`true`) or resumes (`false`) schedule `name`; whether it
    /// exists. While paused the leader moves its cursor past each tick
    /// without a task, so resuming fires nothing missed.
    ///
    /// # Errors
    /// Store failures.
    fn pause_schedule(
        &self,
        ns: &Namespace,
        name: &str,
        paused: bool,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Moves schedule `name`'s cursor as `advance` says, atomically, only if
    /// [`Advance::applies_to`] the stored entry (its cursor is still
    /// `advance.from` and no leader with a larger fencing token moved it);
    /// whether it moved. A deposed leader therefore never moves a schedule
    /// its successor has moved.
    ///
    /// # Errors
    /// Store failures.
    fn advance_schedule(
        &self,
        ns: &Namespace,
        name: &str,
        advance: &Advance,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// Throughput per minute and name, kept in the store on its own clock. A
/// store with it passes `history_conformance_tests!` (feature `testing`).
pub trait HistoryStore: Storage {
    /// Adds `counts` into the buckets of the store's current minute (its
    /// own clock: Redis `TIME`, SQL `NOW(3)` / `statement_timestamp()`), one
    /// bucket per name, in one round trip. Counts are additive: concurrent
    /// calls from many processes sum exactly. Names are kept as given
    /// (distinct bytes, distinct buckets); empty counts add nothing. Every
    /// count is checked with [`check_history`] first.
    ///
    /// # Errors
    /// Store failures; [`crate::Error::Invalid`] for a count [`check_history`] refuses.
    fn add_history(&self, ns: &Namespace, counts: &[HistoryCount])
    -> impl Future<Output = Result<()>> + Send;

    /// Every bucket of `ns` whose minute is at or after `since`, ordered by
    /// minute, then name. A bucket whose stored form does not parse (edited
    /// by hand, a negative count) is left out with a warning.
    ///
    /// # Errors
    /// Store failures.
    fn history(
        &self,
        ns: &Namespace,
        since: Timestamp,
    ) -> impl Future<Output = Result<Vec<HistoryBucket>>> + Send;

    /// Deletes every bucket of `ns` whose minute is before `before`;
    /// answers how many went (a store may answer buckets or minutes). The
    /// leader calls it from housekeeping with the store's now less
    /// `history_keep`.
    ///
    /// # Errors
    /// Store failures.
    fn trim_history(&self, ns: &Namespace, before: Timestamp) -> impl Future<Output = Result<u64>> + Send;
}

/// What an [`crate::Executor`] needs of its store beside [`Storage`]: it
/// announces its worker ([`Presence`]), records throughput
/// ([`HistoryStore`]), samples its queues for the gauges ([`QueueControl`])
/// and fires the cron schedules of its handlers ([`ScheduleStore`]).
/// Implemented for every store that has these abilities; a store without
/// one of them can still serve a [`crate::Client`].
pub trait ExecutorStorage: Storage + Presence + HistoryStore + QueueControl + ScheduleStore {}

impl<S: Storage + Presence + HistoryStore + QueueControl + ScheduleStore> ExecutorStorage for S {}

/// The ability to submit inside the caller's own database transaction:
/// the task is stored if and only if the transaction commits (the outbox
/// problem, solved where the business data lives). `C` is the connection
/// type the caller's transaction derefs to (`sqlx::PgConnection` for
/// PostgreSQL, `sqlx::MySqlConnection` for MySQL), so a store that cannot
/// join such a transaction is a compile error, not a failure at run time.
/// Users call [`crate::Client::submit_in`] or
/// [`crate::TaskBuilder::submit_in`], which check the task as a submit
/// does first.
///
/// A store answers as its `submit` does (created, existing, debounced) as
/// far as the transaction can see; it never commits or rolls back the
/// caller's transaction, and after an error the caller rolls it back.
pub trait SubmitIn<C: ?Sized + Send>: Storage {
    /// Stores `task` in `ns` through `conn`, inside whatever transaction
    /// is open on it.
    ///
    /// # Errors
    /// As [`Storage::submit`]; [`crate::Error::Unsupported`] for a submit
    /// mode the store cannot run inside a transaction.
    fn submit_in(
        &self,
        conn: &mut C,
        ns: &Namespace,
        task: NewTask,
    ) -> impl Future<Output = Result<Submitted>> + Send;
}

/// The ability to serve as a tier of [`crate::TieredStorage`]: list waiting
/// tasks by due time, store a record as given, and delete a waiting task
/// by fence. An ability of its own, so a store without it is a compile
/// error as a tier, not a failure at run time. Memory, Redis and MySQL have
/// it; the tier conformance checks (`tier_conformance_tests!`) test it.
pub trait TierStorage: Storage {
    /// Waiting tasks (`CREATED`/`PENDING`) due before `before`, earliest first,
    /// at most `limit`; nothing changes. Used to promote tasks between tiers.
    ///
    /// # Errors
    /// Store failures.
    fn due_before(
        &self,
        ns: &Namespace,
        before: Timestamp,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TaskRecord>>> + Send;

    /// Stores `record` exactly as given unless a task with its id exists;
    /// returns whether it was stored. Idempotent by id, so a move between
    /// tiers that is repeated after a crash is a no-op.
    ///
    /// # Errors
    /// Store failures.
    fn import(&self, ns: &Namespace, record: TaskRecord) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes a waiting task if its fence is still `fence`; returns whether it
    /// was deleted. The second step of a move between tiers.
    ///
    /// # Errors
    /// Store failures.
    fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> impl Future<Output = Result<bool>> + Send;
}

/// What a heartbeat found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Heartbeat {
    /// Leases that are no longer current: stop the attempt, its write will be refused.
    pub lost: Vec<TaskId>,
    /// Tasks whose cancel was requested: fire their cancellation token.
    pub cancel_requested: Vec<TaskId>,
}

/// What a reap recovered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reaped {
    /// Back to `PENDING`, due now.
    pub retried: Vec<TaskId>,
    /// No attempts left: `FAILED`.
    pub failed: Vec<TaskId>,
    /// Past the deadline: `TIMEOUT`.
    pub timed_out: Vec<TaskId>,
}

impl Reaped {
    /// Every task recovered.
    pub fn len(&self) -> usize {
        self.retried.len() + self.failed.len() + self.timed_out.len()
    }

    /// Nothing was recovered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A term of leadership over a namespace's housekeeping.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leadership {
    /// The leader.
    pub worker: WorkerId,
    /// Fencing token of this term; grows with every new term.
    pub token: u64,
    /// When the term ends unless renewed.
    pub until: Timestamp,
}

impl Leadership {
    /// `worker`'s term with fencing token `token`, ending at `until`.
    pub fn new(worker: WorkerId, token: u64, until: Timestamp) -> Self {
        Self { worker, token, until }
    }
}
