//! The leader's scheduler: stores the handlers' attribute schedules when the
//! executor starts, and, while this process leads its namespace, submits
//! one task per due tick of every schedule.
//!
//! Exactly one task per tick: the task's id is the schedule's name and the
//! tick's instant, submitted idempotently, so a tick submitted twice (a
//! leader that died between submit and cursor move, two leaders during a
//! failover) is stored once. The cursor moves only from the value read and
//! under a fencing token at least the stored one, so a deposed leader never
//! moves a schedule its successor has moved. Ticks are computed on the
//! store's clock.

use std::{sync::Arc, time::Duration};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{
    Error, Namespace, Registry, Result, SubmitOutcome, TaskOptions, Timestamp, metrics as m,
    schedule::{Misfire, Overlap, Schedule, ScheduleEntry},
    storage::{Advance, ExecutorStorage, Leadership, NewTask, SubmitMode},
};

/// What the scheduler needs of the executor.
pub(crate) struct Scheduler<S> {
    pub(crate) storage: Arc<S>,
    pub(crate) ns: Namespace,
    pub(crate) registry: Registry,
    /// How often schedules are re-read (changes by other processes) while
    /// leading, and how often the attribute schedules are retried.
    pub(crate) refresh: Duration,
    pub(crate) misfire_grace: Duration,
}

impl<S: ExecutorStorage> Scheduler<S> {
    /// Runs until `stop`: stores the attribute schedules, then fires due
    /// ticks whenever `leadership` holds a term.
    pub(crate) async fn run(
        self,
        mut leadership: watch::Receiver<Option<Leadership>>,
        stop: CancellationToken,
    ) {
        let mut to_store = match self.registry.schedules() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "a #[reliable_task(cron = ..)] schedule cannot be stored");
                Vec::new()
            }
        };
        loop {
            if !to_store.is_empty() {
                to_store = self.store_attribute_schedules(to_store).await;
            }
            let term = leadership.borrow_and_update().clone();
            let wait = match term {
                Some(term) => match self.fire_due(&term).await {
                    Ok(next) => next.min(self.refresh),
                    Err(e @ Error::Unsupported { .. }) => {
                        // A store without schedules: nothing to fire, ever.
                        tracing::debug!(error = %e, "this store keeps no cron schedules; the scheduler stops");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "firing cron schedules failed; retrying");
                        self.refresh
                    }
                },
                None if to_store.is_empty() => Duration::MAX,
                None => self.refresh,
            };
            tokio::select! {
                () = stop.cancelled() => return,
                changed = leadership.changed() => if changed.is_err() { return },
                () = sleep(wait) => {}
            }
        }
    }

    /// Stores each schedule; answers those to retry (store failures).
    async fn store_attribute_schedules(&self, schedules: Vec<Schedule>) -> Vec<Schedule> {
        let mut retry = Vec::new();
        for s in schedules {
            match self.storage.put_schedule(&self.ns, &s).await {
                Ok(()) => tracing::debug!(schedule = %s.name, cron = %s.cron, "schedule stored"),
                Err(e @ Error::Unsupported { .. }) => {
                    tracing::error!(schedule = %s.name, error = %e, "this store keeps no cron schedules");
                }
                Err(e) => {
                    tracing::warn!(schedule = %s.name, error = %e, "storing a schedule failed; retrying");
                    retry.push(s);
                }
            }
        }
        retry
    }

    /// Fires every due tick of every schedule; answers how long until the
    /// next tick of any of them.
    async fn fire_due(&self, term: &Leadership) -> Result<Duration> {
        let entries = self.storage.schedules(&self.ns).await?;
        if entries.is_empty() {
            // Nothing to fire: no clock read (the caller re-reads at the refresh).
            return Ok(Duration::MAX);
        }
        let now = self.storage.now(&self.ns).await?;
        // The store's now later in this round, without another round trip.
        let read_at = tokio::time::Instant::now();
        let clock = || now.saturating_add(read_at.elapsed());
        let mut next: Option<Timestamp> = None;
        for entry in entries {
            match self.fire_one(entry, now, &clock, term).await {
                Ok(Some(t)) => next = Some(next.map_or(t, |n| n.min(t))),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "firing a schedule failed; retrying"),
            }
        }
        // Waits measured on the store's clock (less the time this round
        // took), slept on this one: the drift over one wait is negligible,
        // and each round re-reads `now`.
        Ok(next.map_or(Duration::MAX, |t| {
            Duration::from_millis(t.as_millis().saturating_sub(clock().as_millis()))
        }))
    }

    /// Handles the due ticks of one schedule; answers its next tick after
    /// `now`.
    async fn fire_one(
        &self,
        entry: ScheduleEntry,
        now: Timestamp,
        clock: &(dyn Fn() -> Timestamp + Sync),
        term: &Leadership,
    ) -> Result<Option<Timestamp>> {
        let schedule = &entry.schedule;
        let cron = match schedule.parsed() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(schedule = %schedule.name, error = %e, "schedule skipped: it does not parse");
                return Ok(None);
            }
        };
        let next = cron.next_after(now);
        let Some(latest) = cron.latest_at(now).filter(|t| *t > entry.cursor) else { return Ok(next) };
        let mut cursor = entry.cursor;
        let mut last_task = entry.last_task.clone();
        let ticks = if entry.paused {
            Vec::new()
        } else {
            match schedule.misfire {
                Misfire::All { max } => {
                    let max = usize::try_from(max.min(crate::schedule::MAX_MISFIRE_ALL)).unwrap_or(1);
                    cron.ticks_between(cursor, now, max)
                }
                Misfire::None if now.since(latest) > self.misfire_grace => Vec::new(),
                _ => vec![latest],
            }
        };
        // Ticks before the first to fire (all of them up to the latest, when
        // none fires) pass without a task.
        let skip_to = match ticks.first() {
            Some(&first) => cron_prev(&cron, first, cursor),
            None => Some(latest),
        };
        if let Some(to) = skip_to.filter(|t| *t > cursor) {
            if !self.advance(schedule, cursor, to, term, None).await? {
                return Ok(next);
            }
            m::schedule_skipped(&schedule.name, if entry.paused { "paused" } else { "misfire" }, 1);
            cursor = to;
        }
        for tick in ticks {
            if tick <= cursor {
                continue;
            }
            if schedule.overlap == Overlap::Skip && self.still_running(last_task.as_ref()).await? {
                if !self.advance(schedule, cursor, tick, term, None).await? {
                    return Ok(next);
                }
                m::schedule_skipped(&schedule.name, "overlap", 1);
                cursor = tick;
                continue;
            }
            let id = schedule.tick_id(tick)?;
            let submitted = match self.storage.submit(&self.ns, self.task(schedule, id.clone())).await {
                Ok(s) => s,
                Err(e) if e.is_retryable() => return Err(e),
                Err(e) => {
                    // The store refuses this task for good (a payload over its
                    // limit): the tick passes rather than being retried forever.
                    tracing::warn!(schedule = %schedule.name, task.id = %id, error = %e, "cron tick refused by the store; skipped");
                    if !self.advance(schedule, cursor, tick, term, None).await? {
                        return Ok(next);
                    }
                    m::schedule_skipped(&schedule.name, "refused", 1);
                    cursor = tick;
                    continue;
                }
            };
            m::submitted(&schedule.task, submitted.outcome);
            m::schedule_fired(&schedule.name, submitted.outcome, clock().since(tick));
            if submitted.outcome == SubmitOutcome::Created {
                tracing::info!(schedule = %schedule.name, task.id = %id, "cron tick fired");
            }
            if !self.advance(schedule, cursor, tick, term, Some(id.clone())).await? {
                return Ok(next);
            }
            cursor = tick;
            last_task = Some(id);
        }
        Ok(next)
    }

    async fn advance(
        &self,
        schedule: &Schedule,
        from: Timestamp,
        to: Timestamp,
        term: &Leadership,
        task: Option<crate::TaskId>,
    ) -> Result<bool> {
        let moved = self
            .storage
            .advance_schedule(&self.ns, &schedule.name, &Advance::new(from, to, term.token, task))
            .await?;
        if !moved {
            tracing::debug!(schedule = %schedule.name, "schedule moved by another leader or changed; re-reading");
        }
        Ok(moved)
    }

    /// Whether the task of the last tick still waits or runs.
    async fn still_running(&self, last: Option<&crate::TaskId>) -> Result<bool> {
        let Some(id) = last else { return Ok(false) };
        Ok(self.storage.get(&self.ns, id).await?.is_some_and(|r| !r.state.is_terminal()))
    }

    /// The task of one tick: the handler's defaults when this process has
    /// the handler, else the global defaults; submitted idempotently.
    fn task(&self, schedule: &Schedule, id: crate::TaskId) -> NewTask {
        let options =
            self.registry.get(&schedule.task).map_or_else(TaskOptions::new, |h| h.default_options().clone());
        let mut task = NewTask::new(id, schedule.task.clone(), schedule.payload.clone().into_bytes());
        task.max_attempts = options.max_attempts();
        task.max_duration = options.max_duration;
        task.timeout = options.timeout;
        task.queue = options.queue;
        task.priority = options.priority;
        task.mode = SubmitMode::Idempotent;
        task
    }
}

/// The latest tick of `cron` strictly before `t` and after `floor`.
fn cron_prev(cron: &crate::schedule::Cron, t: Timestamp, floor: Timestamp) -> Option<Timestamp> {
    let before = Timestamp::from_millis(t.as_millis().checked_sub(1)?);
    cron.latest_at(before).filter(|p| *p > floor)
}

async fn sleep(d: Duration) {
    if d == Duration::MAX {
        std::future::pending::<()>().await;
    } else {
        tokio::time::sleep(d.max(Duration::from_millis(1))).await;
    }
}
