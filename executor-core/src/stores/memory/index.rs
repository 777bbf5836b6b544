//! Ordered indexes over one namespace's tasks, so claim, reap, trim and list
//! touch only the tasks they return (O(log n) each), even with many tasks.

use std::collections::{BTreeMap, BTreeSet};

use crate::{QueueName, TaskId, TaskRecord, TaskState, Timestamp, queue::MAX_PRIORITY};

/// One priority level of one queue: waiting tasks by due time, then `seq`.
pub(super) type Level = BTreeSet<(Timestamp, u64, TaskId)>;

/// Every index a task record can be in. A record is inserted after each
/// change and removed before the next, with the same `seq`.
#[derive(Debug, Default)]
pub(super) struct Indexes {
    /// Waiting tasks (`CREATED`/`PENDING`) by due time; `seq` keeps
    /// submission order among equal due times.
    pub(super) due: BTreeSet<(Timestamp, u64, TaskId)>,
    /// The same tasks per queue and priority (rank 0 is the highest
    /// priority): a claim walks only its queues' levels.
    pub(super) queues: BTreeMap<QueueName, BTreeMap<u8, Level>>,
    /// `RUNNING` tasks per queue, for concurrency limits.
    pub(super) running: BTreeMap<QueueName, u64>,
    /// `RUNNING` tasks by lease expiry.
    pub(super) leases: BTreeSet<(Timestamp, TaskId)>,
    /// `COMPLETED` and `CANCELLED` tasks by `finished_at`.
    pub(super) done: BTreeSet<(Timestamp, TaskId)>,
    /// Dead-lettered tasks by `finished_at`.
    pub(super) dead: BTreeSet<(Timestamp, TaskId)>,
    /// Ids per state, in id order: pagination and counts.
    pub(super) by_state: [BTreeSet<TaskId>; 8],
    /// The same per state and task name: a page of one name reads only
    /// that name's tasks.
    pub(super) by_name: [BTreeMap<String, BTreeSet<TaskId>>; 8],
    next_seq: u64,
}

/// Position of `state` in [`TaskState::ALL`].
pub(super) fn slot(state: TaskState) -> usize {
    TaskState::ALL.iter().position(|s| *s == state).unwrap_or(0)
}

impl Indexes {
    /// A fresh sequence number for a task entering the due index.
    pub(super) fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// Adds `rec` to the indexes its state belongs to.
    pub(super) fn insert(&mut self, rec: &TaskRecord, seq: u64) {
        self.by_state[slot(rec.state)].insert(rec.id.clone());
        self.by_name[slot(rec.state)].entry(rec.name.clone()).or_default().insert(rec.id.clone());
        match rec.state {
            TaskState::Created | TaskState::Pending => {
                self.due.insert((rec.due_at, seq, rec.id.clone()));
                self.queues
                    .entry(rec.queue.clone())
                    .or_default()
                    .entry(rank(rec.priority))
                    .or_default()
                    .insert((rec.due_at, seq, rec.id.clone()));
            }
            TaskState::Running => {
                self.leases.insert((rec.lease_until.unwrap_or_default(), rec.id.clone()));
                *self.running.entry(rec.queue.clone()).or_insert(0) += 1;
            }
            TaskState::Completed | TaskState::Cancelled => {
                self.done.insert((rec.finished_at.unwrap_or_default(), rec.id.clone()));
            }
            TaskState::Failed | TaskState::Timeout | TaskState::Error => {
                self.dead.insert((rec.finished_at.unwrap_or_default(), rec.id.clone()));
            }
        }
    }

    /// Removes `rec` (as it was inserted) from every index.
    pub(super) fn remove(&mut self, rec: &TaskRecord, seq: u64) {
        self.by_state[slot(rec.state)].remove(&rec.id);
        let names = &mut self.by_name[slot(rec.state)];
        if let Some(ids) = names.get_mut(&rec.name) {
            ids.remove(&rec.id);
            if ids.is_empty() {
                names.remove(&rec.name);
            }
        }
        match rec.state {
            TaskState::Created | TaskState::Pending => {
                self.due.remove(&(rec.due_at, seq, rec.id.clone()));
                if let Some(levels) = self.queues.get_mut(&rec.queue) {
                    let r = rank(rec.priority);
                    if let Some(level) = levels.get_mut(&r) {
                        level.remove(&(rec.due_at, seq, rec.id.clone()));
                        if level.is_empty() {
                            levels.remove(&r);
                        }
                    }
                    if levels.is_empty() {
                        self.queues.remove(&rec.queue);
                    }
                }
            }
            TaskState::Running => {
                self.leases.remove(&(rec.lease_until.unwrap_or_default(), rec.id.clone()));
                if let Some(n) = self.running.get_mut(&rec.queue) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.running.remove(&rec.queue);
                    }
                }
            }
            TaskState::Completed | TaskState::Cancelled => {
                self.done.remove(&(rec.finished_at.unwrap_or_default(), rec.id.clone()));
            }
            TaskState::Failed | TaskState::Timeout | TaskState::Error => {
                self.dead.remove(&(rec.finished_at.unwrap_or_default(), rec.id.clone()));
            }
        }
    }

    /// The first due task of `queue` (highest priority, then earliest due,
    /// then submission), if one is due at `now`.
    pub(super) fn first_due(&self, queue: &QueueName, now: Timestamp) -> Option<TaskId> {
        self.queues
            .get(queue)?
            .values()
            .find_map(|level| level.first().filter(|(due, _, _)| *due <= now).map(|(_, _, id)| id.clone()))
    }

    /// The earliest due time of a waiting task of `queue`.
    pub(super) fn earliest_due_in(&self, queue: &QueueName) -> Option<Timestamp> {
        self.queues.get(queue)?.values().filter_map(|level| level.first().map(|(due, _, _)| *due)).min()
    }
}

/// Index order of a priority: the highest priority sorts first.
fn rank(priority: u8) -> u8 {
    MAX_PRIORITY.saturating_sub(priority)
}
