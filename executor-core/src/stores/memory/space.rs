//! One namespace's tasks and the state changes on them. Every method runs
//! inside the namespace's critical section, so each is one atomic step.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::{
    Error, QueueName, Result, SubmitOutcome, Submitted, TaskId, TaskRecord, TaskState, Timestamp, WorkerId,
    attempt_log::{AttemptOutcome, AttemptRecord},
    query::CancelOutcome,
    queue::{ClaimPlan, QueueInfo, QueueLimits},
    storage::{Due, Finish, Heartbeat, Leadership, Lease, NewTask, ScheduleEntry, SubmitMode},
};

use super::index::Indexes;
use crate::attempt_log::{bounded_error, push_bounded};
use std::time::Duration;

impl Limited {
    /// Adds the tokens earned since the last look, up to the burst.
    fn refill(&mut self, now: Timestamp) {
        if let Some(rate) = self.limits.rate {
            let earned = rate.refill(now.since(self.at));
            self.tokens = (self.tokens + earned).min(f64::from(rate.burst));
        }
        self.at = self.at.max(now);
    }

    /// How many tasks a claim may take now, with `running` of them running.
    fn allowance(&mut self, running: u64, now: Timestamp) -> usize {
        let mut allowed = usize::MAX;
        if let Some(n) = self.limits.concurrency {
            allowed = usize::try_from(u64::from(n).saturating_sub(running)).unwrap_or(usize::MAX);
        }
        if self.limits.rate.is_some() {
            self.refill(now);
            // Whole tokens only; the float never exceeds the burst (u32).
            allowed = allowed.min(self.tokens.max(0.0).floor() as usize);
        }
        allowed
    }

    /// Takes the tokens of `n` started tasks.
    fn spend(&mut self, n: usize) {
        if self.limits.rate.is_some() {
            self.tokens = (self.tokens - n as f64).max(0.0);
        }
    }
}

/// The tasks of one namespace, their indexes, debounce keys and leadership.
#[derive(Debug, Default)]
pub(super) struct Space {
    pub(super) tasks: HashMap<TaskId, Entry>,
    pub(super) idx: Indexes,
    /// Debounce key → the task it binds while that task waits.
    pub(super) debounce: HashMap<String, TaskId>,
    pub(super) leader: Option<Leadership>,
    /// Largest fencing token handed out so far.
    pub(super) last_token: u64,
    /// Announced workers: their handler names and when that lapses.
    pub(super) workers: HashMap<WorkerId, (Vec<String>, Timestamp)>,
    /// Cron schedules by name.
    pub(super) schedules: BTreeMap<String, ScheduleEntry>,
    /// Queues paused fleet-wide.
    pub(super) paused: BTreeSet<QueueName>,
    /// Queues with limits, and their rate buckets.
    pub(super) limits: BTreeMap<QueueName, Limited>,
    /// Throughput history: (minute, task name) -> (succeeded, failed).
    pub(super) history: BTreeMap<(Timestamp, String), (u64, u64)>,
}

/// A queue's limits and its token bucket.
#[derive(Debug)]
pub(super) struct Limited {
    limits: QueueLimits,
    /// Tokens left as of `at`.
    tokens: f64,
    at: Timestamp,
    /// Claims a limit cut short while due tasks remained.
    throttled: u64,
}

/// A stored task and the sequence number it was indexed with.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) record: TaskRecord,
    pub(super) seq: u64,
    /// The nonce of the submit that created it (0: imported from a tier):
    /// a resend of that submit is answered as it was the first time.
    pub(super) nonce: u64,
}

impl Space {
    /// Applies `f` to a task and re-indexes it. `None` if it does not exist.
    pub(super) fn change<R>(&mut self, id: &TaskId, f: impl FnOnce(&mut TaskRecord) -> R) -> Option<R> {
        let entry = self.tasks.get_mut(id)?;
        self.idx.remove(&entry.record, entry.seq);
        let out = f(&mut entry.record);
        entry.seq = self.idx.next_seq();
        self.idx.insert(&entry.record, entry.seq);
        Some(out)
    }

    pub(super) fn insert(&mut self, record: TaskRecord) {
        self.insert_submitted(record, 0);
    }

    fn insert_submitted(&mut self, record: TaskRecord, nonce: u64) {
        let seq = self.idx.next_seq();
        self.idx.insert(&record, seq);
        self.tasks.insert(record.id.clone(), Entry { record, seq, nonce });
    }

    /// Deletes a task (retention) and its debounce key.
    pub(super) fn delete(&mut self, id: &TaskId) -> Option<TaskRecord> {
        let entry = self.tasks.remove(id)?;
        self.idx.remove(&entry.record, entry.seq);
        self.unbind_key(&entry.record);
        Some(entry.record)
    }

    /// A debounce key binds only while its task waits.
    fn unbind_key(&mut self, rec: &TaskRecord) {
        if let Some(key) = &rec.debounce_key
            && self.debounce.get(key) == Some(&rec.id)
        {
            self.debounce.remove(key);
        }
    }

    /// The task a debounce key binds, with its creation time, while it waits.
    fn waiting_under(&self, key: &str) -> Option<(TaskId, Timestamp)> {
        let id = self.debounce.get(key)?;
        let rec = &self.tasks.get(id)?.record;
        rec.state.is_waiting().then(|| (id.clone(), rec.created_at))
    }

    fn state_of(&self, id: &TaskId) -> Option<TaskState> {
        self.tasks.get(id).map(|e| e.record.state)
    }

    /// Stores a task, or applies an idempotent or debounced submit.
    pub(super) fn submit(&mut self, now: Timestamp, task: NewTask, max_payload: usize) -> Result<Submitted> {
        task.validate()?;
        if task.payload.len() > max_payload {
            return Err(Error::PayloadTooLarge { size: task.payload.len(), limit: max_payload });
        }
        let nonce = task.nonce();
        let exists = match self.tasks.get(&task.id) {
            // The same submit again (its first answer was lost): what it
            // created, answered as the first time.
            Some(e) if e.nonce == nonce => return Ok(Submitted::new(task.id, SubmitOutcome::Created)),
            Some(_) => true,
            None => false,
        };
        let due_at = match &task.mode {
            SubmitMode::Plain if exists => return Err(Error::DuplicateId(task.id)),
            SubmitMode::Idempotent if exists => {
                return Ok(Submitted::new(task.id, SubmitOutcome::Existing));
            }
            SubmitMode::Debounce(d) => {
                if let Some((id, created_at)) = self.waiting_under(&d.key) {
                    let mut due = now.saturating_add(d.window);
                    if let Some(max_wait) = d.max_wait {
                        due = due.min(created_at.saturating_add(max_wait));
                    }
                    let payload = task.payload;
                    self.change(&id, |r| {
                        r.due_at = due;
                        r.payload = payload;
                    });
                    return Ok(Submitted::new(id, SubmitOutcome::Debounced));
                }
                if exists {
                    return Err(Error::DuplicateId(task.id));
                }
                now.saturating_add(d.window)
            }
            SubmitMode::Plain | SubmitMode::Idempotent => match task.due {
                Due::Now => now,
                Due::After(d) => now.saturating_add(d),
                Due::At(ts) => ts,
            },
        };
        let debounce_key = match task.mode {
            SubmitMode::Debounce(d) => Some(d.key),
            _ => None,
        };
        if let Some(key) = &debounce_key {
            self.debounce.insert(key.clone(), task.id.clone());
        }
        let id = task.id;
        self.insert_submitted(
            TaskRecord {
                id: id.clone(),
                name: task.name,
                state: TaskState::Created,
                payload: task.payload,
                attempts: 0,
                max_attempts: task.max_attempts,
                fence: 0,
                created_at: now,
                due_at,
                started_at: None,
                finished_at: None,
                deadline: task.max_duration.map(|d| now.saturating_add(d)),
                timeout: task.timeout,
                retry: task.retry,
                last_error: None,
                worker: None,
                lease_until: None,
                cancel_requested: false,
                debounce_key,
                queue: task.queue,
                priority: task.priority,
                attempt_log: Vec::new(),
            },
            nonce,
        );
        Ok(Submitted::new(id, SubmitOutcome::Created))
    }

    /// Claims as `plan` says (no two live attempts and no start before due): each share's quota from
    /// its queue, then the rest of the limit from the same queues in order.
    pub(super) fn claim(
        &mut self,
        now: Timestamp,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Vec<TaskRecord> {
        let mut out = Vec::with_capacity(plan.limit.min(1024));
        let shares = plan.shares.iter().filter(|s| !self.paused.contains(&s.queue)).collect::<Vec<_>>();
        // A queue a limit cut short counts once per claim, whichever pass.
        let mut cut = BTreeSet::new();
        for share in &shares {
            let upto = (out.len() + share.quota).min(plan.limit);
            if self.take_limited(&share.queue, upto, now, worker, lease, &mut out) {
                cut.insert(share.queue.clone());
            }
        }
        for share in &shares {
            if self.take_limited(&share.queue, plan.limit, now, worker, lease, &mut out) {
                cut.insert(share.queue.clone());
            }
        }
        for queue in cut {
            if let Some(l) = self.limits.get_mut(&queue) {
                l.throttled += 1;
            }
        }
        out
    }

    /// [`Space::take`] within `queue`'s limits: no more than its
    /// concurrency limit leaves and than whole tokens are in its bucket;
    /// the tokens used are taken out. Whether a limit cut the take short
    /// while due tasks remained.
    fn take_limited(
        &mut self,
        queue: &QueueName,
        upto: usize,
        now: Timestamp,
        worker: &WorkerId,
        lease: Duration,
        out: &mut Vec<TaskRecord>,
    ) -> bool {
        let running = self.idx.running.get(queue).copied().unwrap_or(0);
        let allowed = match self.limits.get_mut(queue) {
            None => usize::MAX,
            Some(l) => l.allowance(running, now),
        };
        let before = out.len();
        let capped = upto.min(before.saturating_add(allowed));
        self.take(queue, capped, now, worker, lease, out);
        if let Some(l) = self.limits.get_mut(queue) {
            l.spend(out.len() - before);
        }
        capped < upto && out.len() == capped && self.idx.first_due(queue, now).is_some()
    }

    /// When a claim of `queue` could next take a task: its earliest due
    /// time, later if its bucket is empty (when a token is earned), `None`
    /// when it is paused, empty or at its concurrency limit (a finish frees
    /// the slot, and the finishing process claims again itself).
    pub(super) fn next_claimable(&mut self, queue: &QueueName, now: Timestamp) -> Option<Timestamp> {
        if self.paused.contains(queue) {
            return None;
        }
        let due = self.idx.earliest_due_in(queue)?;
        let running = self.idx.running.get(queue).copied().unwrap_or(0);
        let Some(l) = self.limits.get_mut(queue) else { return Some(due) };
        if l.allowance(running, now) > 0 {
            return Some(due);
        }
        match (l.limits.concurrency, l.limits.rate) {
            (Some(n), _) if running >= u64::from(n) => None,
            (_, Some(rate)) => {
                let missing = (1.0 - l.tokens).max(0.0);
                // A millisecond more, so the wake finds the token earned.
                let wait = Duration::from_secs_f64(missing * rate.per.as_secs_f64() / f64::from(rate.starts))
                    + Duration::from_millis(1);
                Some(due.max(now.saturating_add(wait)))
            }
            _ => Some(due),
        }
    }

    /// How many tasks run in queues with a concurrency limit: when a change
    /// lowers it, a slot such a queue's claimers wait for is free.
    pub(super) fn running_in_limited_queues(&self) -> u64 {
        self.limits
            .iter()
            .filter(|(_, l)| l.limits.concurrency.is_some())
            .map(|(q, _)| self.idx.running.get(q).copied().unwrap_or(0))
            .sum()
    }

    /// Sets or clears `queue`'s limits (see `QueueControl::set_queue_limits`).
    pub(super) fn set_limits(&mut self, queue: &QueueName, limits: QueueLimits, now: Timestamp) {
        if limits.is_none() {
            self.limits.remove(queue);
            return;
        }
        let throttled = self.limits.get(queue).map_or(0, |l| l.throttled);
        let tokens = match (self.limits.get_mut(queue), limits.rate) {
            (Some(old), Some(rate)) if old.limits.rate.is_some() => {
                old.refill(now);
                old.tokens.min(f64::from(rate.burst))
            }
            (_, Some(rate)) => f64::from(rate.burst),
            (_, None) => 0.0,
        };
        self.limits.insert(queue.clone(), Limited { limits, tokens, at: now, throttled });
    }

    /// Claims due tasks of `queue` into `out` until it holds `upto`.
    fn take(
        &mut self,
        queue: &QueueName,
        upto: usize,
        now: Timestamp,
        worker: &WorkerId,
        lease: Duration,
        out: &mut Vec<TaskRecord>,
    ) {
        while out.len() < upto {
            let Some(id) = self.idx.first_due(queue, now) else { break };
            let claimed = self.change(&id, |r| {
                r.state = TaskState::Running;
                r.fence += 1;
                r.attempts = r.attempts.saturating_add(1);
                r.started_at = Some(now);
                r.worker = Some(worker.clone());
                r.lease_until = Some(now.saturating_add(lease));
                r.cancel_requested = false;
                r.clone()
            });
            // An index entry without its task cannot happen (both change
            // together); stop rather than spin if it ever did.
            let Some(rec) = claimed else { break };
            self.unbind_key(&rec);
            out.push(rec);
        }
    }

    /// The queues with waiting tasks or paused, by name.
    pub(super) fn queues(&self, now: Timestamp) -> Vec<QueueInfo> {
        let mut out: BTreeMap<QueueName, QueueInfo> = BTreeMap::new();
        for (queue, levels) in &self.idx.queues {
            let info = out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue.clone()));
            for level in levels.values() {
                info.waiting += level.len() as u64;
                let due = level.iter().take_while(|(d, _, _)| *d <= now).count() as u64;
                info.due += due;
                if let Some((first, _, _)) = level.first().filter(|_| due > 0) {
                    info.oldest_due = Some(info.oldest_due.map_or(*first, |o| o.min(*first)));
                }
            }
        }
        for queue in &self.paused {
            out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue.clone())).paused = true;
        }
        for (queue, n) in &self.idx.running {
            out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue.clone())).running = *n;
        }
        for (queue, l) in &self.limits {
            let info = out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue.clone()));
            info.limits = l.limits;
            info.throttled = l.throttled;
        }
        out.into_values().collect()
    }

    /// Renews the current leases; reports lost ones and cancel requests.
    pub(super) fn heartbeat(&mut self, now: Timestamp, leases: &[Lease], lease: Duration) -> Heartbeat {
        let mut hb = Heartbeat::default();
        for l in leases {
            let current = self
                .tasks
                .get(&l.id)
                .filter(|e| e.record.state == TaskState::Running && e.record.fence == l.fence)
                .map(|e| e.record.cancel_requested);
            match current {
                Some(cancel) => {
                    self.change(&l.id, |r| r.lease_until = Some(now.saturating_add(lease)));
                    if cancel {
                        hb.cancel_requested.push(l.id.clone());
                    }
                }
                None => hb.lost.push(l.id.clone()),
            }
        }
        hb
    }

    /// Ends an attempt if `lease` is still current (no two live attempts).
    pub(super) fn finish(&mut self, now: Timestamp, lease: &Lease, finish: Finish) -> Result<TaskState> {
        finish.validate()?;
        let current = self
            .tasks
            .get(&lease.id)
            .is_some_and(|e| e.record.state == TaskState::Running && e.record.fence == lease.fence);
        if !current {
            return Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence });
        }
        let target = finish.target();
        self.change(&lease.id, |r| {
            r.state = target;
            r.worker = None;
            r.lease_until = None;
            match finish {
                Finish::Completed | Finish::Cancelled => r.finished_at = Some(now),
                Finish::Retry { delay, error } => {
                    let mut ended = AttemptRecord::new(r.attempts, AttemptOutcome::Failed, now);
                    ended.worker = Some(lease.worker.clone());
                    ended.started_at = r.started_at;
                    ended.error = Some(bounded_error(&error));
                    push_bounded(&mut r.attempt_log, ended);
                    r.due_at = now.saturating_add(delay);
                    r.last_error = Some(error);
                }
                Finish::Failed { error } | Finish::TimedOut { error } | Finish::Errored { error } => {
                    r.finished_at = Some(now);
                    r.last_error = Some(error);
                }
                Finish::Released => {
                    r.due_at = now;
                    r.attempts = r.attempts.saturating_sub(1);
                }
                Finish::Postponed { delay, error } => {
                    r.due_at = now.saturating_add(delay);
                    r.attempts = r.attempts.saturating_sub(1);
                    r.last_error = Some(error);
                }
            }
        });
        Ok(target)
    }

    /// Cancels a waiting task, or flags a running one for its next heartbeat.
    pub(super) fn cancel(&mut self, now: Timestamp, id: &TaskId) -> Result<CancelOutcome> {
        match self.state_of(id) {
            None => Err(Error::NotFound(id.clone())),
            Some(TaskState::Created | TaskState::Pending) => {
                let rec = self.change(id, |r| {
                    r.state = TaskState::Cancelled;
                    r.finished_at = Some(now);
                    r.clone()
                });
                if let Some(rec) = rec {
                    self.unbind_key(&rec);
                }
                Ok(CancelOutcome::Cancelled)
            }
            Some(TaskState::Running) => {
                self.change(id, |r| r.cancel_requested = true);
                Ok(CancelOutcome::Requested)
            }
            Some(state) => Err(Error::IllegalTransition { id: id.clone(), state, action: "cancel" }),
        }
    }

    /// Moves a dead-lettered task back to `PENDING`, due now, attempts reset,
    /// logging the attempt that dead-lettered it.
    pub(super) fn requeue(&mut self, now: Timestamp, id: &TaskId) -> Result<()> {
        match self.state_of(id) {
            None => Err(Error::NotFound(id.clone())),
            Some(state) if state.is_dead_letter() => {
                self.change(id, |r| {
                    // The attempt that dead-lettered it stays on the page.
                    let mut ended =
                        AttemptRecord::new(r.attempts, AttemptOutcome::Dead, r.finished_at.unwrap_or(now));
                    ended.started_at = r.started_at;
                    ended.error = r.last_error.as_deref().map(bounded_error);
                    push_bounded(&mut r.attempt_log, ended);
                    r.state = TaskState::Pending;
                    r.due_at = now;
                    r.attempts = 0;
                    r.finished_at = None;
                });
                Ok(())
            }
            Some(state) => Err(Error::IllegalTransition { id: id.clone(), state, action: "requeue" }),
        }
    }

    /// A waiting task due later becomes due `now`; one already due stays.
    pub(super) fn run_now(&mut self, now: Timestamp, id: &TaskId) -> Result<()> {
        match self.state_of(id) {
            None => Err(Error::NotFound(id.clone())),
            Some(state) if state.is_waiting() => {
                // Changing only a later due time keeps a due task's place
                // (`change` gives the record a new sequence number).
                if self.tasks.get(id).is_some_and(|e| e.record.due_at > now) {
                    self.change(id, |r| r.due_at = now);
                }
                Ok(())
            }
            Some(state) => Err(Error::IllegalTransition { id: id.clone(), state, action: "run now" }),
        }
    }

    /// Reads one task.
    pub(super) fn get(&self, id: &TaskId) -> Option<TaskRecord> {
        self.tasks.get(id).map(|e| e.record.clone())
    }
}
