//! Reaping expired leases, retention, leadership and the read-only queries
//! (list, counts) of one namespace.

use std::{collections::BTreeSet, ops::Bound, time::Duration};

use crate::{
    Error, ListQuery, Page, Result, TaskId, TaskState, Timestamp, WorkerId,
    attempt_log::{AttemptOutcome, AttemptRecord},
    query::{Retention, StateCounts, WorkerInfo},
    storage::{Leadership, Reaped},
};

use super::{index::slot, space::Space};
use crate::attempt_log::push_bounded;

/// The reason a reaped task records.
pub(super) const LEASE_EXPIRED: &str = "lease expired (worker presumed dead)";

/// Marks cursors this store made, so a foreign one is refused.
const CURSOR_PREFIX: &str = "mem1.";

impl Space {
    /// Recovers up to `limit` tasks whose lease expired before `now`. The fence
    /// grows so a late write of the presumed-dead worker is refused (no two live attempts).
    /// A task that waits again logs the lost attempt (`lease_expired`).
    pub(super) fn reap(&mut self, now: Timestamp, limit: usize) -> Reaped {
        let mut reaped = Reaped::default();
        while reaped.len() < limit {
            let Some((until, id)) = self.idx.leases.first().cloned() else { break };
            if until >= now {
                break;
            }
            self.idx.leases.pop_first();
            let state = self.change(&id, |r| {
                r.state = if r.deadline.is_some_and(|d| d <= now) {
                    TaskState::Timeout
                } else if r.attempts >= r.max_attempts {
                    TaskState::Failed
                } else {
                    TaskState::Pending
                };
                r.fence += 1;
                let worker = r.worker.take();
                r.lease_until = None;
                r.last_error = Some(LEASE_EXPIRED.to_owned());
                if r.state == TaskState::Pending {
                    let mut ended = AttemptRecord::new(r.attempts, AttemptOutcome::LeaseExpired, now);
                    ended.worker = worker;
                    ended.started_at = r.started_at;
                    ended.error = Some(LEASE_EXPIRED.to_owned());
                    push_bounded(&mut r.attempt_log, ended);
                    r.due_at = now;
                } else {
                    r.finished_at = Some(now);
                }
                r.state
            });
            match state {
                Some(TaskState::Timeout) => reaped.timed_out.push(id),
                Some(TaskState::Failed) => reaped.failed.push(id),
                Some(_) => reaped.retried.push(id),
                None => {}
            }
        }
        reaped
    }

    /// Deletes up to `limit` finished tasks older than `retention` allows.
    pub(super) fn trim(&mut self, now: Timestamp, retention: &Retention, limit: usize) -> u64 {
        let mut doomed = Vec::new();
        // Oldest first: past the age, or past the count (the `excess` oldest).
        let classes = [
            (&self.idx.done, Some(retention.completed), retention.completed_max),
            (&self.idx.dead, retention.dead_letter, retention.dead_letter_max),
        ];
        for (index, keep, max) in classes {
            let cutoff = keep.map(|k| now.saturating_sub(k));
            let excess = max.map_or(0, |m| (index.len() as u64).saturating_sub(m));
            let room = limit - doomed.len();
            doomed.extend(
                index
                    .iter()
                    .enumerate()
                    .take_while(|(i, (at, _))| (*i as u64) < excess || cutoff.is_some_and(|c| *at < c))
                    .take(room)
                    .map(|(_, (_, id))| id.clone()),
            );
        }
        doomed.iter().filter(|id| self.delete(id).is_some()).count() as u64
    }

    /// Starts a new term if leadership is free or expired, renews it for the
    /// holder, else `None`.
    pub(super) fn acquire_leadership(
        &mut self,
        now: Timestamp,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Option<Leadership> {
        let until = now.saturating_add(ttl);
        match &mut self.leader {
            Some(term) if term.until > now => {
                if term.worker != *worker {
                    return None;
                }
                term.until = until;
                Some(term.clone())
            }
            _ => {
                self.last_token += 1;
                let term = Leadership::new(worker.clone(), self.last_token, until);
                self.leader = Some(term.clone());
                Some(term)
            }
        }
    }

    /// Frees leadership if `term` still holds it; a stale term changes nothing.
    pub(super) fn release_leadership(&mut self, term: &Leadership) {
        if self.leader.as_ref().is_some_and(|t| t.token == term.token) {
            self.leader = None;
        }
    }

    /// Records `worker`'s handler names until `ttl` from now.
    pub(super) fn announce(&mut self, now: Timestamp, worker: &WorkerId, names: &[String], ttl: Duration) {
        self.workers.insert(worker.clone(), (names.to_vec(), now.saturating_add(ttl)));
    }

    /// The unlapsed announcements; lapsed ones are dropped.
    pub(super) fn workers(&mut self, now: Timestamp) -> Vec<WorkerInfo> {
        self.workers.retain(|_, (_, until)| *until > now);
        self.workers
            .iter()
            .map(|(worker, (names, until))| WorkerInfo::new(worker.clone(), names.iter().cloned(), *until))
            .collect()
    }

    /// The current, unexpired term.
    pub(super) fn leader(&self, now: Timestamp) -> Option<Leadership> {
        self.leader.clone().filter(|t| t.until > now)
    }

    /// One page of the tasks in a state (of one name), in id order after
    /// the cursor.
    pub(super) fn list(&self, query: ListQuery) -> Result<Page> {
        query.validate()?;
        let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
        let empty = BTreeSet::new();
        let ids = match &query.name {
            None => &self.idx.by_state[slot(query.state)],
            Some(name) => self.idx.by_name[slot(query.state)].get(name).unwrap_or(&empty),
        };
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut window = ids.range((start, Bound::Unbounded));
        let tasks: Vec<_> = window
            .by_ref()
            .take(query.limit)
            .filter_map(|id| self.tasks.get(id).map(|e| e.record.clone()))
            .collect();
        let next = match (window.next(), tasks.last()) {
            (Some(_), Some(last)) => Some(encode_cursor(&last.id)),
            _ => None,
        };
        Ok(Page { tasks, next, unreadable: Vec::new() })
    }

    /// Tasks per state.
    pub(super) fn counts(&self) -> StateCounts {
        TaskState::ALL
            .into_iter()
            .map(|s| (s, self.idx.by_state[slot(s)].len() as u64))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// The cursor is the last id of the page, hex-encoded behind a prefix: opaque
/// to callers, and any id text survives it.
fn encode_cursor(id: &TaskId) -> String {
    let mut out = String::with_capacity(CURSOR_PREFIX.len() + 2 * id.as_str().len());
    out.push_str(CURSOR_PREFIX);
    for b in id.as_str().bytes() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn decode_cursor(cursor: &str) -> Result<TaskId> {
    let bad = || Error::invalid("cursor", format!("`{cursor}` was not made by this MemoryStorage's list"));
    let hex = cursor.strip_prefix(CURSOR_PREFIX).ok_or_else(bad)?;
    if hex.len() % 2 != 0 {
        return Err(bad());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    TaskId::new(text).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() -> Result<()> {
        let id = TaskId::new("order_7:é")?;
        assert_eq!(decode_cursor(&encode_cursor(&id))?, id);
        for bad in ["", "mem1.", "mem1.6", "mem1.zz", "0", "order_7"] {
            assert!(matches!(decode_cursor(bad), Err(Error::Invalid { .. })), "{bad:?} accepted");
        }
        Ok(())
    }
}
