//! `TieredStorage`: a hot store for tasks due soon (Redis) and a cold one
//! for far-future tasks (MySQL), with tasks promoted from cold to hot by the
//! elected leader shortly before they fall due.

pub(crate) mod promote;

use crate::storage::{HistoryStore, Presence, QueueControl, RunNow, ScheduleStore};
use std::{fmt, time::Duration};

use crate::{
    Error, ListQuery, Namespace, Page, Result, SubmitOutcome, Submitted, TaskId, TaskRecord, TaskState,
    Timestamp, WorkerId,
    query::{CancelOutcome, Retention, StateCounts},
    storage::{Due, Finish, Heartbeat, Leadership, Lease, NewTask, Reaped, Storage, SubmitMode, TierStorage},
};

#[cfg(feature = "testing")]
use promote::PromoteStep;

/// Default horizon: tasks due within 5 minutes live in the hot store.
pub const DEFAULT_HORIZON: Duration = Duration::from_secs(300);

/// A [`Storage`] made of a hot and a cold storage.
///
/// - **Submit** routes by due time: due within the horizon (default 5
///   minutes) → hot, later → cold. Debounced submits always go hot.
/// - **Claim, heartbeat, finish, leadership, wake-up** use the hot store only.
/// - **Promotion**: the leader's housekeeping moves tasks that come within the
///   horizon from cold to hot in batches: insert into hot idempotently by id,
///   then delete from cold if unchanged. A crash between the two repeats the
///   insert, which is a no-op: never lost, never duplicated.
/// - **Retries** that back off past the horizon move to cold the same way.
/// - **Status, list, cancel, requeue, counts** see one task wherever it lives.
///
/// Both stores must implement the tier methods of [`Storage`]
/// (`due_before`, `import`, `remove`); `MemoryStorage`, `RedisStorage` and
/// `MySqlStorage` do.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::{MemoryStorage, TieredStorage};
///
/// let tiered = TieredStorage::new(MemoryStorage::new(), MemoryStorage::new())
///     .horizon(Duration::from_secs(60));
/// assert_eq!(tiered.horizon_len(), Duration::from_secs(60));
/// ```
pub struct TieredStorage<H, C> {
    hot: H,
    cold: C,
    horizon: Duration,
    promote_batch: usize,
    #[cfg(feature = "testing")]
    crash_after: std::sync::Arc<std::sync::Mutex<Option<PromoteStep>>>,
}

impl<H, C> fmt::Debug for TieredStorage<H, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TieredStorage")
            .field("horizon", &self.horizon)
            .field("promote_batch", &self.promote_batch)
            .finish_non_exhaustive()
    }
}

impl<H: Clone, C: Clone> Clone for TieredStorage<H, C> {
    fn clone(&self) -> Self {
        Self {
            hot: self.hot.clone(),
            cold: self.cold.clone(),
            horizon: self.horizon,
            promote_batch: self.promote_batch,
            #[cfg(feature = "testing")]
            crash_after: std::sync::Arc::clone(&self.crash_after),
        }
    }
}

/// Which store a task is routed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Due within the horizon.
    Hot,
    /// Due later.
    Cold,
}

impl<H: TierStorage, C: TierStorage> TieredStorage<H, C> {
    /// Hot and cold stores with the default horizon (5 minutes) and promotion
    /// batches of 500.
    pub fn new(hot: H, cold: C) -> Self {
        Self {
            hot,
            cold,
            horizon: DEFAULT_HORIZON,
            promote_batch: 500,
            #[cfg(feature = "testing")]
            crash_after: std::sync::Arc::default(),
        }
    }

    /// Sets the horizon: tasks due within it live in the hot store.
    pub fn horizon(mut self, horizon: Duration) -> Self {
        self.horizon = horizon;
        self
    }

    /// The horizon.
    pub fn horizon_len(&self) -> Duration {
        self.horizon
    }

    /// Sets how many tasks one promotion step moves at most.
    pub fn promote_batch(mut self, n: usize) -> Self {
        self.promote_batch = n.max(1);
        self
    }

    /// The hot store.
    pub fn hot(&self) -> &H {
        &self.hot
    }

    /// The cold store.
    pub fn cold(&self) -> &C {
        &self.cold
    }

    /// Where a submit goes.
    pub async fn route(&self, ns: &Namespace, task: &NewTask) -> Result<Tier> {
        self.route_with(ns, task, &mut None).await
    }

    /// As [`TieredStorage::route`]; `hot_now` keeps the hot store's clock
    /// once read, for the next task of a batch.
    async fn route_with(
        &self,
        ns: &Namespace,
        task: &NewTask,
        hot_now: &mut Option<Timestamp>,
    ) -> Result<Tier> {
        if matches!(task.mode, SubmitMode::Debounce(_)) {
            return Ok(Tier::Hot);
        }
        let far = match task.due {
            Due::Now => false,
            Due::After(d) => d > self.horizon,
            Due::At(at) => {
                let now = match *hot_now {
                    Some(now) => now,
                    None => *hot_now.insert(self.hot.now(ns).await?),
                };
                at > now.saturating_add(self.horizon)
            }
        };
        Ok(if far { Tier::Cold } else { Tier::Hot })
    }

    /// Which store holds the task now, if any (hot first: during a move the
    /// hot copy is the live one).
    pub async fn locate(&self, ns: &Namespace, id: &TaskId) -> Result<Option<(Tier, TaskRecord)>> {
        if let Some(r) = self.hot.get(ns, id).await? {
            return Ok(Some((Tier::Hot, r)));
        }
        Ok(self.cold.get(ns, id).await?.map(|r| (Tier::Cold, r)))
    }

    /// A retry that backs off past the horizon moves to cold: the hot copy
    /// is already `PENDING`; insert it into cold, then delete it from hot. A
    /// crash in between leaves it in both, and promotion later drops the
    /// cold copy (the hot insert is a no-op).
    async fn demote(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        let Some(record) = self.hot.get(ns, id).await? else { return Ok(()) };
        if !record.state.is_waiting() {
            return Ok(());
        }
        self.cold.import(ns, record.clone()).await?;
        if !self.hot.remove(ns, id, record.fence).await? {
            // Changed meanwhile (cancelled, requeued): the hot copy wins.
            self.cold.remove(ns, id, record.fence).await?;
        }
        Ok(())
    }

    fn far(&self, finish: &Finish) -> bool {
        matches!(finish, Finish::Retry { delay, .. } if *delay > self.horizon)
    }

    /// The answer for a task whose id the other tier already holds (ids
    /// are unique across both tiers), or the task back when it holds none.
    async fn check_other_tier(
        &self,
        ns: &Namespace,
        tier: Tier,
        task: NewTask,
    ) -> Result<std::result::Result<NewTask, Submitted>> {
        let other_has = match tier {
            Tier::Hot => self.cold.get(ns, &task.id).await?.is_some(),
            Tier::Cold => self.hot.get(ns, &task.id).await?.is_some(),
        };
        if !other_has {
            return Ok(Ok(task));
        }
        match task.mode {
            SubmitMode::Idempotent => Ok(Err(Submitted::new(task.id, SubmitOutcome::Existing))),
            _ => Err(Error::DuplicateId(task.id)),
        }
    }
}

impl<H: TierStorage, C: TierStorage> Storage for TieredStorage<H, C> {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        task.validate()?;
        let tier = self.route(ns, &task).await?;
        let task = match self.check_other_tier(ns, tier, task).await? {
            Ok(task) => task,
            Err(existing) => return Ok(existing),
        };
        match tier {
            Tier::Hot => self.hot.submit(ns, task).await,
            Tier::Cold => self.cold.submit(ns, task).await,
        }
    }

    /// Routes every task, checks the other tier for each id, then sends one
    /// `submit_many` per tier; each task keeps its own answer, in order.
    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        let n = tasks.len();
        let mut out: Vec<Option<Result<Submitted>>> = (0..n).map(|_| None).collect();
        // Each tier's tasks with their place in the batch.
        let mut hot: Vec<(usize, NewTask)> = Vec::new();
        let mut cold: Vec<(usize, NewTask)> = Vec::new();
        // The hot store's clock, read once for every `Due::At` in the batch.
        let mut hot_now: Option<Timestamp> = None;
        for (i, task) in tasks.into_iter().enumerate() {
            if let Err(e) = task.validate() {
                out[i] = Some(Err(e));
                continue;
            }
            let tier = self.route_with(ns, &task, &mut hot_now).await?;
            match self.check_other_tier(ns, tier, task).await {
                Ok(Ok(task)) if tier == Tier::Cold => cold.push((i, task)),
                Ok(Ok(task)) => hot.push((i, task)),
                Ok(Err(existing)) => out[i] = Some(Ok(existing)),
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        for (tier, batch) in [(Tier::Hot, hot), (Tier::Cold, cold)] {
            if batch.is_empty() {
                continue;
            }
            let (slots, batch): (Vec<usize>, Vec<NewTask>) = batch.into_iter().unzip();
            let answers = match tier {
                Tier::Hot => self.hot.submit_many(ns, batch).await?,
                Tier::Cold => self.cold.submit_many(ns, batch).await?,
            };
            if answers.len() != slots.len() {
                return Err(Error::storage(
                    format!("the {tier:?} store answered {} of {} tasks", answers.len(), slots.len()),
                    false,
                ));
            }
            for (i, answer) in slots.into_iter().zip(answers) {
                out[i] = Some(answer);
            }
        }
        Ok(out
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(Error::storage("no answer for a task", false))))
            .collect())
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &crate::queue::ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.hot.claim(ns, worker, plan, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.hot.heartbeat(ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        let far = self.far(&finish);
        let state = self.hot.finish(ns, lease, finish).await?;
        if far && let Err(e) = self.demote(ns, &lease.id).await {
            tracing::warn!(error = %e, task.id = %lease.id, "moving a far retry to the cold store failed; it waits in the hot store");
        }
        Ok(state)
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        let far: Vec<Option<TaskId>> = items.iter().map(|(l, f)| self.far(f).then(|| l.id.clone())).collect();
        let results = self.hot.finish_many(ns, items).await?;
        for (id, r) in far.iter().zip(&results) {
            if let (Some(id), Ok(_)) = (id, r)
                && let Err(e) = self.demote(ns, id).await
            {
                tracing::warn!(error = %e, task.id = %id, "moving a far retry to the cold store failed");
            }
        }
        Ok(results)
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        match self.hot.cancel(ns, id).await {
            Err(Error::NotFound(_)) => {}
            other => return other,
        }
        let outcome = self.cold.cancel(ns, id).await?;
        // A promotion may have copied the task to hot meanwhile: cancel that copy too.
        if let Err(e) = self.hot.cancel(ns, id).await
            && !matches!(e, Error::NotFound(_) | Error::IllegalTransition { .. })
        {
            return Err(e);
        }
        Ok(outcome)
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        Ok(self.locate(ns, id).await?.map(|(_, r)| r))
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        let (tier, inner) = match query.cursor.as_deref() {
            None => (Tier::Hot, None),
            Some(c) => match c.split_once(':') {
                Some(("h", rest)) => (Tier::Hot, Some(rest.to_owned())),
                Some(("c", rest)) => (Tier::Cold, Some(rest.to_owned())),
                _ => return Err(Error::invalid("cursor", "not a cursor of this store")),
            },
        };
        let inner = inner.filter(|c| !c.is_empty());
        let q = ListQuery { cursor: inner, ..query.clone() };
        match tier {
            Tier::Hot => {
                let mut page = self.hot.list(ns, q).await?;
                if let Some(n) = page.next {
                    return Ok(Page { next: Some(format!("h:{n}")), ..page });
                }
                // Hot is exhausted: fill the page from cold, so a short list is one page.
                let room = query.limit.saturating_sub(page.tasks.len());
                let cold =
                    self.cold.list(ns, ListQuery { cursor: None, limit: room.max(1), ..query }).await?;
                let next = if room == 0 {
                    (!cold.tasks.is_empty()).then(|| "c:".to_owned())
                } else {
                    page.tasks.extend(cold.tasks);
                    page.unreadable.extend(cold.unreadable);
                    cold.next.map(|n| format!("c:{n}"))
                };
                Ok(Page { next, ..page })
            }
            Tier::Cold => {
                let page = self.cold.list(ns, q).await?;
                Ok(Page { next: page.next.as_ref().map(|n| format!("c:{n}")), ..page })
            }
        }
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        // Cold first: a promotion racing the delete then finds nothing to copy.
        let cold = self.cold.delete(ns, id).await?;
        let hot = self.hot.delete(ns, id).await?;
        Ok(hot || cold)
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        let (hot, cold) = (self.hot.counts(ns).await?, self.cold.counts(ns).await?);
        Ok(hot.iter().chain(cold.iter()).collect())
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        match self.hot.requeue(ns, id).await {
            Err(Error::NotFound(_)) => self.cold.requeue(ns, id).await,
            other => other,
        }
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        self.hot.reap(ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        Ok(self.hot.trim(ns, retention, limit).await? + self.cold.trim(ns, retention, limit).await?)
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        w: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.hot.acquire_leadership(ns, w, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        self.hot.release_leadership(ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        self.hot.leader(ns).await
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        self.hot.now(ns).await
    }

    /// The lower of the two tiers' limits: a task may live in either.
    async fn max_payload(&self) -> Result<usize> {
        Ok(self.hot.max_payload().await?.min(self.cold.max_payload().await?))
    }

    async fn housekeeping(&self, ns: &Namespace) -> Result<()> {
        self.hot.housekeeping(ns).await?;
        self.cold.housekeeping(ns).await?;
        self.promote(ns).await.map(|_| ())
    }

    async fn wait_for_work(
        &self,
        ns: &Namespace,
        queues: &[crate::QueueName],
        max_wait: Duration,
    ) -> Result<()> {
        self.hot.wait_for_work(ns, queues, max_wait).await
    }
}

impl<H: TierStorage + QueueControl, C: TierStorage + QueueControl> QueueControl for TieredStorage<H, C> {
    async fn pause_queue(&self, ns: &Namespace, queue: &crate::QueueName, paused: bool) -> Result<()> {
        self.hot.pause_queue(ns, queue, paused).await
    }

    async fn set_queue_limits(
        &self,
        ns: &Namespace,
        queue: &crate::QueueName,
        limits: &crate::queue::QueueLimits,
    ) -> Result<()> {
        self.hot.set_queue_limits(ns, queue, limits).await
    }

    /// The hot store's queues (pause lives there), with the far-future
    /// tasks the cold store keeps added to their queues' waiting counts.
    async fn queues(&self, ns: &Namespace) -> Result<Vec<crate::queue::QueueInfo>> {
        let mut out = self.hot.queues(ns).await?;
        for cold in self.cold.queues(ns).await? {
            match out.iter_mut().find(|q| q.queue == cold.queue) {
                Some(q) => {
                    q.waiting += cold.waiting;
                    q.due += cold.due;
                    q.oldest_due = match (q.oldest_due, cold.oldest_due) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                None if cold.waiting > 0 => out.push(crate::queue::QueueInfo { paused: false, ..cold }),
                None => {}
            }
        }
        out.sort_by(|a, b| a.queue.cmp(&b.queue));
        Ok(out)
    }
}

impl<H: TierStorage + RunNow, C: TierStorage + RunNow> RunNow for TieredStorage<H, C> {
    /// The hot copy when there is one; else the cold one, moved to hot at
    /// once by a promotion round (it is now among the earliest due; should
    /// the round fail, the promoter's next one moves it).
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        match self.hot.run_now(ns, id).await {
            Err(Error::NotFound(_)) => {
                self.cold.run_now(ns, id).await?;
                if let Err(e) = self.promote(ns).await {
                    tracing::warn!(error = %e, task.id = %id, "promoting a task run now failed; the promoter retries");
                }
                Ok(())
            }
            other => other,
        }
    }
}

impl<H: TierStorage + Presence, C: TierStorage> Presence for TieredStorage<H, C> {
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        self.hot.announce(ns, worker, names, ttl).await
    }

    async fn workers(&self, ns: &Namespace) -> Result<Vec<crate::query::WorkerInfo>> {
        self.hot.workers(ns).await
    }
}

impl<H: TierStorage + ScheduleStore, C: TierStorage> ScheduleStore for TieredStorage<H, C> {
    // Schedules live beside the leadership whose fencing tokens guard them,
    // and on the clock that computes their ticks: the hot store's.

    async fn put_schedule(&self, ns: &Namespace, schedule: &crate::schedule::Schedule) -> Result<()> {
        self.hot.put_schedule(ns, schedule).await
    }

    async fn schedules(&self, ns: &Namespace) -> Result<Vec<crate::storage::ScheduleEntry>> {
        self.hot.schedules(ns).await
    }

    async fn remove_schedule(&self, ns: &Namespace, name: &str) -> Result<bool> {
        self.hot.remove_schedule(ns, name).await
    }

    async fn pause_schedule(&self, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
        self.hot.pause_schedule(ns, name, paused).await
    }

    async fn advance_schedule(
        &self,
        ns: &Namespace,
        name: &str,
        advance: &crate::storage::Advance,
    ) -> Result<bool> {
        self.hot.advance_schedule(ns, name, advance).await
    }
}

impl<H: TierStorage + HistoryStore, C: TierStorage> HistoryStore for TieredStorage<H, C> {
    // History is counted on the clock of the hot store, beside the
    // leadership whose leader trims it.

    async fn add_history(&self, ns: &Namespace, counts: &[crate::storage::HistoryCount]) -> Result<()> {
        self.hot.add_history(ns, counts).await
    }

    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<crate::storage::HistoryBucket>> {
        self.hot.history(ns, since).await
    }

    async fn trim_history(&self, ns: &Namespace, before: Timestamp) -> Result<u64> {
        self.hot.trim_history(ns, before).await
    }
}
