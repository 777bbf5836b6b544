//! [`MemoryStorage`]: the embedded, non-durable default store.

mod clock;
mod history;
mod housekeeping;
mod index;
mod space;
#[cfg(test)]
mod tests;
mod tier;

use crate::storage::{HistoryStore, Presence, QueueControl, RunNow, ScheduleStore};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::sync::Notify;

use crate::{
    ListQuery, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord, TaskState, Timestamp,
    WorkerId,
    query::{CancelOutcome, Retention, StateCounts, WorkerInfo},
    queue::{ClaimPlan, QueueInfo, QueueLimits},
    schedule::Schedule,
    storage::{
        Advance, Finish, Heartbeat, HistoryBucket, HistoryCount, Leadership, Lease, NewTask, Reaped,
        ScheduleEntry, Storage, TierStorage, check_duration, check_history,
    },
};

use self::{clock::Clock, space::Space};

/// Keeps tasks in this process's memory: every semantic of [`Storage`]
/// (leases and fences, debounce, idempotent submit, dead letter, requeue,
/// reaping, retention, leadership) with none of the durability.
///
/// **Not durable**: everything is lost when the process exits, and only this
/// process sees it. It is the default for the quickstart and for tests; run
/// production on Redis or MySQL.
///
/// Clones share the same tasks. Its clock is the wall clock at creation plus
/// tokio's monotonic time since, so tests with paused time
/// (`#[tokio::test(start_paused = true)]`) control every due time and lease;
/// create it inside the runtime whose clock it should follow.
///
/// Each namespace is one lock-protected state with ordered indexes (due
/// time, lease expiry, finish time, state), so claim, reap and trim cost
/// O(log n) per task they touch, however many tasks wait.
///
/// ```
/// use reliable_executor::{MemoryStorage, Namespace, TaskBuilder, TaskOptions, TaskState, storage::Storage};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> reliable_executor::Result<()> {
/// let store = MemoryStorage::new();
/// let ns = Namespace::new("my-app")?;
/// let task = TaskBuilder::new("send_mail", "hi", TaskOptions::new()).into_new_task()?;
/// let id = store.submit(&ns, task).await?.id;
/// assert_eq!(store.get(&ns, &id).await?.map(|t| t.state), Some(TaskState::Created));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MemoryStorage {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    clock: Clock,
    spaces: Mutex<HashMap<Namespace, Arc<NamespaceStore>>>,
}

/// One namespace: its tasks behind one lock, and the wake-up of its idle claimers.
#[derive(Debug, Default)]
struct NamespaceStore {
    space: Mutex<Space>,
    work: Notify,
}

impl NamespaceStore {
    /// Locks the namespace. A panic while it was held leaves no half-made
    /// change (each change is computed before it is applied), so a poisoned
    /// lock is taken over rather than propagated.
    fn lock(&self) -> MutexGuard<'_, Space> {
        self.space.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStorage {
    /// An empty store whose clock starts now. It holds payloads up to
    /// [`MemoryStorage::MAX_PAYLOAD`]; the limit users set is
    /// [`ExecutorBuilder::max_payload`](crate::ExecutorBuilder::max_payload).
    pub fn new() -> Self {
        Self { shared: Arc::default() }
    }

    /// The largest payload this store holds, in bytes: 512 MiB, as a Redis
    /// string, so a payload refused by Redis is refused here too. The limit
    /// users set is [`crate::ExecutorBuilder::max_payload`].
    pub const MAX_PAYLOAD: usize = 512 << 20;

    /// The store's clock: the time stamped on every record.
    pub fn now(&self) -> Timestamp {
        self.shared.clock.now()
    }

    /// Drops every task and the leadership of `ns` (a test's cleanup).
    pub fn remove_namespace(&self, ns: &Namespace) {
        self.shared.spaces.lock().unwrap_or_else(PoisonError::into_inner).remove(ns);
    }

    fn namespace(&self, ns: &Namespace) -> Arc<NamespaceStore> {
        let mut spaces = self.shared.spaces.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(spaces.entry(ns.clone()).or_default())
    }

    /// Runs `f` in the namespace's critical section with the store's now.
    fn with<R>(&self, ns: &Namespace, f: impl FnOnce(&mut Space, Timestamp) -> R) -> R {
        let store = self.namespace(ns);
        let mut space = store.lock();
        f(&mut space, self.now())
    }

    /// As [`MemoryStorage::with`] for a change that may take tasks out of
    /// RUNNING (a finish, a reap, a delete): when one left a queue with a
    /// concurrency limit, its slot is free and idle claimers are woken, since
    /// their wait leaves a queue at its limit out: without the wake-up the
    /// freed slot would wait out their whole idle wait.
    fn with_release<R>(&self, ns: &Namespace, f: impl FnOnce(&mut Space, Timestamp) -> R) -> R {
        let (out, freed) = self.with(ns, |space, now| {
            let before = space.running_in_limited_queues();
            let out = f(space, now);
            (out, space.running_in_limited_queues() < before)
        });
        if freed {
            self.wake(ns);
        }
        out
    }

    /// Sleeps until the earliest due time of `queues` that are not paused,
    /// a wake-up, or `max_wait`.
    async fn wait(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        let store = self.namespace(ns);
        let clock = self.shared.clock;
        let woken = store.work.notified();
        tokio::pin!(woken);
        // Registered before looking at the due index, so a wake-up between the
        // look and the sleep is not missed.
        woken.as_mut().enable();
        let earliest = {
            let mut space = store.lock();
            let now = clock.now();
            queues.iter().filter_map(|q| space.next_claimable(q, now)).min()
        };
        let now = tokio::time::Instant::now();
        // A wait too long for an `Instant` (Duration::MAX) is a year: the
        // caller gets a spurious return, which the contract allows.
        let give_up = now.checked_add(max_wait).unwrap_or(now + Duration::from_secs(365 * 86_400));
        let until = match earliest {
            Some(due) if due <= clock.now() => return Ok(()),
            Some(due) => clock.instant_of(due).map_or(give_up, |at| at.min(give_up)),
            None => give_up,
        };
        tokio::select! {
            () = woken => {}
            () = tokio::time::sleep_until(until) => {}
        }
        Ok(())
    }

    /// Tells idle claimers of `ns` that work may be due.
    fn wake(&self, ns: &Namespace) {
        self.namespace(ns).work.notify_waiters();
    }
}

impl Storage for MemoryStorage {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        let out = self.with(ns, |space, now| space.submit(now, task, Self::MAX_PAYLOAD));
        if out.is_ok() {
            self.wake(ns);
        }
        out
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        let out: Vec<_> = self.with(ns, |space, now| {
            tasks.into_iter().map(|t| space.submit(now, t, Self::MAX_PAYLOAD)).collect()
        });
        if out.iter().any(Result::is_ok) {
            self.wake(ns);
        }
        Ok(out)
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        Ok(self.with(ns, |space, now| space.claim(now, worker, plan, lease)))
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        Ok(self.with(ns, |space, now| space.heartbeat(now, leases, lease)))
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        let out = self.with_release(ns, |space, now| space.finish(now, lease, finish));
        if matches!(out, Ok(TaskState::Pending)) {
            self.wake(ns);
        }
        out
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        let out: Vec<_> = self.with_release(ns, |space, now| {
            items.into_iter().map(|(lease, finish)| space.finish(now, &lease, finish)).collect()
        });
        if out.iter().any(|r| matches!(r, Ok(TaskState::Pending))) {
            self.wake(ns);
        }
        Ok(out)
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        self.with_release(ns, |space, now| space.cancel(now, id))
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        Ok(self.with(ns, |space, _| space.get(id)))
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        self.with(ns, |space, _| space.list(query))
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        Ok(self.with_release(ns, |space, _| space.delete(id).is_some()))
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        Ok(self.with(ns, |space, _| space.counts()))
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.with(ns, |space, now| space.requeue(now, id))?;
        self.wake(ns);
        Ok(())
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        let reaped = self.with_release(ns, |space, now| space.reap(now, limit));
        if !reaped.retried.is_empty() {
            self.wake(ns);
        }
        Ok(reaped)
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        Ok(self.with(ns, |space, now| space.trim(now, retention, limit)))
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        Ok(self.with(ns, |space, now| space.acquire_leadership(now, worker, ttl)))
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        self.with(ns, |space, _| space.release_leadership(term));
        Ok(())
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        Ok(self.with(ns, |space, now| space.leader(now)))
    }

    /// The process clock (the memory store has no other).
    async fn now(&self, _ns: &Namespace) -> Result<Timestamp> {
        Ok(MemoryStorage::now(self))
    }

    async fn max_payload(&self) -> Result<usize> {
        Ok(Self::MAX_PAYLOAD)
    }

    /// Returns at once if a task of `queues` that are not paused is due;
    /// else sleeps until the earliest due time among them, a wake-up from a
    /// submit, retry, release, requeue or reap, or `max_wait`, whichever is
    /// first, so due work starts within milliseconds without polling.
    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        self.wait(ns, queues, max_wait).await
    }
}

impl QueueControl for MemoryStorage {
    async fn pause_queue(&self, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
        self.with(ns, |space, _| {
            if paused {
                space.paused.insert(queue.clone());
            } else {
                space.paused.remove(queue);
            }
        });
        if !paused {
            self.wake(ns);
        }
        Ok(())
    }

    async fn set_queue_limits(&self, ns: &Namespace, queue: &QueueName, limits: &QueueLimits) -> Result<()> {
        limits.validate()?;
        self.with(ns, |space, now| space.set_limits(queue, *limits, now));
        self.wake(ns);
        Ok(())
    }

    async fn queues(&self, ns: &Namespace) -> Result<Vec<QueueInfo>> {
        Ok(self.with(ns, |space, now| space.queues(now)))
    }
}

impl RunNow for MemoryStorage {
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.with(ns, |space, now| space.run_now(now, id))?;
        self.wake(ns);
        Ok(())
    }
}

impl Presence for MemoryStorage {
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        check_duration("announce ttl", ttl)?;
        self.with(ns, |space, now| space.announce(now, worker, names, ttl));
        Ok(())
    }

    async fn workers(&self, ns: &Namespace) -> Result<Vec<WorkerInfo>> {
        Ok(self.with(ns, |space, now| space.workers(now)))
    }
}

impl ScheduleStore for MemoryStorage {
    async fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> Result<()> {
        self.with(ns, |space, now| match space.schedules.get_mut(&schedule.name) {
            Some(entry) => entry.schedule = schedule.clone(),
            None => {
                space.schedules.insert(schedule.name.clone(), ScheduleEntry::new(schedule.clone(), now));
            }
        });
        Ok(())
    }

    async fn schedules(&self, ns: &Namespace) -> Result<Vec<ScheduleEntry>> {
        Ok(self.with(ns, |space, _| space.schedules.values().cloned().collect()))
    }

    async fn remove_schedule(&self, ns: &Namespace, name: &str) -> Result<bool> {
        Ok(self.with(ns, |space, _| space.schedules.remove(name).is_some()))
    }

    async fn pause_schedule(&self, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
        Ok(self.with(ns, |space, _| space.schedules.get_mut(name).map(|e| e.paused = paused).is_some()))
    }

    async fn advance_schedule(&self, ns: &Namespace, name: &str, advance: &Advance) -> Result<bool> {
        Ok(self.with(ns, |space, _| match space.schedules.get_mut(name) {
            Some(entry) if advance.applies_to(entry) => {
                advance.apply(entry);
                true
            }
            _ => false,
        }))
    }
}

impl HistoryStore for MemoryStorage {
    async fn add_history(&self, ns: &Namespace, counts: &[HistoryCount]) -> Result<()> {
        let counts = check_history(counts)?;
        if !counts.is_empty() {
            self.with(ns, |space, now| space.add_history(now, &counts));
        }
        Ok(())
    }

    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<HistoryBucket>> {
        Ok(self.with(ns, |space, _| space.history(since)))
    }

    async fn trim_history(&self, ns: &Namespace, before: Timestamp) -> Result<u64> {
        Ok(self.with(ns, |space, _| space.trim_history(before)))
    }
}

impl TierStorage for MemoryStorage {
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        Ok(self.with(ns, |space, _| space.due_before(before, limit)))
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        let stored = self.with(ns, |space, _| space.import(record));
        if stored {
            self.wake(ns);
        }
        Ok(stored)
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        Ok(self.with(ns, |space, _| space.remove_waiting(id, fence)))
    }
}
