//! [`Intercepted`]: a [`Storage`] that sends the worker-path calls (claim,
//! heartbeat, finish, the history flush), leadership renewal, the query and admin calls (get, list, counts,
//! cancel, requeue, delete) and tier imports through user hooks and
//! forwards everything else to the store it wraps, so a test double or a recorder keeps only its own
//! logic instead of re-forwarding the whole trait.

use crate::storage::{HistoryStore, Presence, QueueControl, RunNow, ScheduleStore};
use std::{future::Future, time::Duration};

use crate::{
    ListQuery, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord, TaskState, Timestamp,
    WorkerId,
    query::{CancelOutcome, Retention, StateCounts},
    queue::ClaimPlan,
    storage::{Finish, Heartbeat, Leadership, Lease, NewTask, Reaped, Storage, TierStorage},
};

/// Hooks around the calls a worker or an operator makes on its store. Every method gets
/// the wrapped store `inner` and the call's arguments; the default bodies
/// just call `inner`, so an implementation overrides only what it watches
/// or bends (delays a reply, reports leases lost, records answers).
///
/// Methods return `impl Future + Send` like [`Storage`], so implementations
/// write plain `async fn`.
///
/// [`Storage::finish_many`] reaches [`Intercept::finish_many`], not
/// [`Intercept::finish`]: a hook that must see every finished attempt
/// overrides both.
///
/// `()` is the hook that changes nothing.
///
/// # Example
///
/// Counting the tasks claimed from a [`crate::MemoryStorage`]:
///
/// ```
/// use std::{
///     sync::atomic::{AtomicUsize, Ordering},
///     time::Duration,
/// };
///
/// use reliable_executor::{
///     MemoryStorage, Namespace, Result, TaskRecord, WorkerId,
///     queue::ClaimPlan,
///     storage::Storage,
///     testing::{self, Intercept, Intercepted},
/// };
///
/// #[derive(Debug, Default)]
/// struct CountClaims(AtomicUsize);
///
/// impl<S: Storage> Intercept<S> for CountClaims {
///     async fn claim(
///         &self,
///         inner: &S,
///         ns: &Namespace,
///         worker: &WorkerId,
///         plan: &ClaimPlan,
///         lease: Duration,
///     ) -> Result<Vec<TaskRecord>> {
///         let got = inner.claim(ns, worker, plan, lease).await?;
///         self.0.fetch_add(got.len(), Ordering::SeqCst);
///         Ok(got)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Intercepted::new(MemoryStorage::new(), CountClaims::default());
/// let ns = testing::unique_namespace("intercept-doc");
/// store.submit(&ns, testing::new_task("a")).await?;
/// let plan = ClaimPlan::default_queue(10);
/// let claimed = store.claim(&ns, &WorkerId::new("w1")?, &plan, Duration::from_secs(30)).await?;
/// assert_eq!(claimed.len(), 1);
/// assert_eq!(store.hooks().0.load(Ordering::SeqCst), 1);
/// // Everything else goes straight to the memory store.
/// assert_eq!(store.counts(&ns).await?.total(), 1);
/// # Ok(())
/// # }
/// ```
pub trait Intercept<S: Storage>: Send + Sync {
    /// Around [`Storage::claim`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn claim(
        &self,
        inner: &S,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> impl Future<Output = Result<Vec<TaskRecord>>> + Send {
        inner.claim(ns, worker, plan, lease)
    }

    /// Around [`Storage::heartbeat`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn heartbeat(
        &self,
        inner: &S,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> impl Future<Output = Result<Heartbeat>> + Send {
        inner.heartbeat(ns, leases, lease)
    }

    /// Around [`Storage::finish`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn finish(
        &self,
        inner: &S,
        ns: &Namespace,
        lease: &Lease,
        finish: Finish,
    ) -> impl Future<Output = Result<TaskState>> + Send {
        inner.finish(ns, lease, finish)
    }

    /// Around [`Storage::finish_many`]; by default the inner store's own
    /// batch, not one [`Intercept::finish`] per item.
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn finish_many(
        &self,
        inner: &S,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> impl Future<Output = Result<Vec<Result<TaskState>>>> + Send {
        inner.finish_many(ns, items)
    }
    /// Around [`HistoryStore::add_history`]: the executor's history flush.
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn add_history(
        &self,
        inner: &S,
        ns: &Namespace,
        counts: &[crate::storage::HistoryCount],
    ) -> impl Future<Output = Result<()>> + Send
    where
        S: HistoryStore,
    {
        inner.add_history(ns, counts)
    }

    /// Around [`Storage::cancel`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn cancel(
        &self,
        inner: &S,
        ns: &Namespace,
        id: &TaskId,
    ) -> impl Future<Output = Result<CancelOutcome>> + Send {
        inner.cancel(ns, id)
    }

    /// Around [`Storage::acquire_leadership`]: e.g. a process that stops
    /// renewing its term as a crashed one would.
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn acquire_leadership(
        &self,
        inner: &S,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<Leadership>>> + Send {
        inner.acquire_leadership(ns, worker, ttl)
    }

    /// Around [`Storage::get`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn get(
        &self,
        inner: &S,
        ns: &Namespace,
        id: &TaskId,
    ) -> impl Future<Output = Result<Option<TaskRecord>>> + Send {
        inner.get(ns, id)
    }

    /// Around [`Storage::list`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn list(&self, inner: &S, ns: &Namespace, query: ListQuery) -> impl Future<Output = Result<Page>> + Send {
        inner.list(ns, query)
    }

    /// Around [`Storage::delete`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn delete(&self, inner: &S, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<bool>> + Send {
        inner.delete(ns, id)
    }

    /// Around [`Storage::counts`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn counts(&self, inner: &S, ns: &Namespace) -> impl Future<Output = Result<StateCounts>> + Send {
        inner.counts(ns)
    }

    /// Around [`Storage::requeue`].
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn requeue(&self, inner: &S, ns: &Namespace, id: &TaskId) -> impl Future<Output = Result<()>> + Send {
        inner.requeue(ns, id)
    }

    /// Around [`TierStorage::import`] (a tier's insert of a promoted task).
    ///
    /// # Errors
    /// Whatever the hook or `inner` answers.
    fn import(
        &self,
        inner: &S,
        ns: &Namespace,
        record: TaskRecord,
    ) -> impl Future<Output = Result<bool>> + Send
    where
        S: TierStorage,
    {
        inner.import(ns, record)
    }
}

impl<S: Storage> Intercept<S> for () {}

/// A store `S` whose claims, heartbeats, finishes, reads, cancels,
/// requeues, deletes and imports go through the hooks `I`; every other
/// method goes straight to `S`, including the ones the trait has defaults
/// for (`submit_many`, `housekeeping`), so the wrapper behaves like `S`
/// wherever the hooks do not say otherwise. See [`Intercept`] for an example.
#[derive(Clone, Debug, Default)]
pub struct Intercepted<S, I> {
    inner: S,
    hooks: I,
}

impl<S, I> Intercepted<S, I> {
    /// Wraps `inner`, sending its worker-path calls through `hooks`.
    pub fn new(inner: S, hooks: I) -> Self {
        Self { inner, hooks }
    }

    /// The wrapped store, for calls that must bypass the hooks.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The hooks, to read what they recorded.
    pub fn hooks(&self) -> &I {
        &self.hooks
    }

    /// The store and the hooks, taken apart.
    pub fn into_parts(self) -> (S, I) {
        (self.inner, self.hooks)
    }
}

impl<S: Storage, I: Intercept<S> + 'static> Storage for Intercepted<S, I> {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.inner.submit(ns, task).await
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        self.inner.submit_many(ns, tasks).await
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.hooks.claim(&self.inner, ns, worker, plan, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.hooks.heartbeat(&self.inner, ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        self.hooks.finish(&self.inner, ns, lease, finish).await
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        self.hooks.finish_many(&self.inner, ns, items).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        self.hooks.cancel(&self.inner, ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        self.hooks.get(&self.inner, ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        self.hooks.list(&self.inner, ns, query).await
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        self.hooks.delete(&self.inner, ns, id).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        self.hooks.counts(&self.inner, ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.hooks.requeue(&self.inner, ns, id).await
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        self.inner.reap(ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        self.inner.trim(ns, retention, limit).await
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.hooks.acquire_leadership(&self.inner, ns, worker, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        self.inner.release_leadership(ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        self.inner.leader(ns).await
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        self.inner.now(ns).await
    }

    async fn max_payload(&self) -> Result<usize> {
        self.inner.max_payload().await
    }

    async fn housekeeping(&self, ns: &Namespace) -> Result<()> {
        self.inner.housekeeping(ns).await
    }

    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        self.inner.wait_for_work(ns, queues, max_wait).await
    }
}

impl<S: QueueControl, I: Intercept<S> + 'static> QueueControl for Intercepted<S, I> {
    async fn pause_queue(&self, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
        self.inner.pause_queue(ns, queue, paused).await
    }

    async fn set_queue_limits(
        &self,
        ns: &Namespace,
        queue: &QueueName,
        limits: &crate::queue::QueueLimits,
    ) -> Result<()> {
        self.inner.set_queue_limits(ns, queue, limits).await
    }

    async fn queues(&self, ns: &Namespace) -> Result<Vec<crate::queue::QueueInfo>> {
        self.inner.queues(ns).await
    }
}

impl<S: RunNow, I: Intercept<S> + 'static> RunNow for Intercepted<S, I> {
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.inner.run_now(ns, id).await
    }
}

impl<S: Presence, I: Intercept<S> + 'static> Presence for Intercepted<S, I> {
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        self.inner.announce(ns, worker, names, ttl).await
    }

    async fn workers(&self, ns: &Namespace) -> Result<Vec<crate::query::WorkerInfo>> {
        self.inner.workers(ns).await
    }
}

impl<S: ScheduleStore, I: Intercept<S> + 'static> ScheduleStore for Intercepted<S, I> {
    async fn put_schedule(&self, ns: &Namespace, schedule: &crate::schedule::Schedule) -> Result<()> {
        self.inner.put_schedule(ns, schedule).await
    }

    async fn schedules(&self, ns: &Namespace) -> Result<Vec<crate::storage::ScheduleEntry>> {
        self.inner.schedules(ns).await
    }

    async fn remove_schedule(&self, ns: &Namespace, name: &str) -> Result<bool> {
        self.inner.remove_schedule(ns, name).await
    }

    async fn pause_schedule(&self, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
        self.inner.pause_schedule(ns, name, paused).await
    }

    async fn advance_schedule(
        &self,
        ns: &Namespace,
        name: &str,
        advance: &crate::storage::Advance,
    ) -> Result<bool> {
        self.inner.advance_schedule(ns, name, advance).await
    }
}

impl<S: HistoryStore, I: Intercept<S> + 'static> HistoryStore for Intercepted<S, I> {
    async fn add_history(&self, ns: &Namespace, counts: &[crate::storage::HistoryCount]) -> Result<()> {
        self.hooks.add_history(&self.inner, ns, counts).await
    }

    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<crate::storage::HistoryBucket>> {
        self.inner.history(ns, since).await
    }

    async fn trim_history(&self, ns: &Namespace, before: Timestamp) -> Result<u64> {
        self.inner.trim_history(ns, before).await
    }
}

impl<S: TierStorage, I: Intercept<S> + 'static> TierStorage for Intercepted<S, I> {
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        self.inner.due_before(ns, before, limit).await
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        self.hooks.import(&self.inner, ns, record).await
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        self.inner.remove(ns, id, fence).await
    }
}

#[cfg(test)]
mod tests;
