//! [`Recorded`]: a `Storage` that forwards every call to the real store and
//! writes what claims, finishes and heartbeats answered to the ledger, so
//! the checker sees refused stale writes and lost leases, not only what the
//! handler saw.

use std::time::Duration;

use executor_core::{
    CancelOutcome, Error, Finish, Heartbeat, Leadership, Lease, ListQuery, Namespace, NewTask, Page, Reaped,
    Result, Retention, StateCounts, Storage, Submitted, TaskId, TaskRecord, TaskState, Timestamp, WorkerId,
};

use crate::ledger::{Event, Ledger, now_ms};

/// A store whose claims, finishes and heartbeats are recorded.
#[derive(Debug)]
pub struct Recorded<S> {
    inner: S,
    ledger: Ledger,
    pid: u32,
}

impl<S> Recorded<S> {
    /// Wraps `inner`, recording into `ledger`.
    pub fn new(inner: S, ledger: Ledger) -> Self {
        Self { inner, ledger, pid: std::process::id() }
    }

    fn finished(&self, lease: &Lease, target: TaskState, r: &Result<TaskState>) {
        let result = match r {
            Ok(s) => format!("ok:{s}"),
            Err(Error::StaleFence { .. }) => "stale".to_owned(),
            Err(e) => format!("err:{e}"),
        };
        self.ledger.record(&Event::Finish {
            task: lease.id.as_str().to_owned(),
            fence: lease.fence,
            pid: self.pid,
            t: now_ms(),
            target: target.to_string(),
            result,
        });
    }
}

impl<S: Storage> Storage for Recorded<S> {
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
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let r = self.inner.claim(ns, worker, limit, lease).await;
        let t = now_ms();
        match &r {
            Ok(tasks) => {
                for task in tasks {
                    self.ledger.record(&Event::Claim {
                        task: task.id.as_str().to_owned(),
                        fence: task.fence,
                        attempt: task.attempts,
                        pid: self.pid,
                        t,
                    });
                }
            }
            Err(e) => self.ledger.record(&Event::ClaimErr { pid: self.pid, t, error: e.to_string() }),
        }
        r
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        let r = self.inner.heartbeat(ns, leases, lease).await;
        match &r {
            Ok(h) if !h.lost.is_empty() => self.ledger.record(&Event::Lost {
                tasks: h.lost.iter().map(|id| id.as_str().to_owned()).collect(),
                pid: self.pid,
                t: now_ms(),
            }),
            Ok(_) => {}
            Err(_) => self.ledger.record(&Event::HeartbeatErr { pid: self.pid, t: now_ms() }),
        }
        r
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        let target = finish.target();
        let r = self.inner.finish(ns, lease, finish).await;
        self.finished(lease, target, &r);
        r
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        let keys: Vec<(Lease, TaskState)> = items.iter().map(|(l, f)| (l.clone(), f.target())).collect();
        let r = self.inner.finish_many(ns, items).await;
        match &r {
            Ok(results) => {
                for ((lease, target), res) in keys.iter().zip(results) {
                    self.finished(lease, *target, res);
                }
            }
            Err(e) => {
                let text = e.to_string();
                for (lease, target) in &keys {
                    self.finished(lease, *target, &Err(Error::storage(text.clone(), true)));
                }
            }
        }
        r
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        self.inner.cancel(ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        self.inner.get(ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        self.inner.list(ns, query).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        self.inner.counts(ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.inner.requeue(ns, id).await
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
        self.inner.acquire_leadership(ns, worker, ttl).await
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

    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        self.inner.due_before(ns, before, limit).await
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        self.inner.import(ns, record).await
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        self.inner.remove(ns, id, fence).await
    }

    async fn housekeeping(&self, ns: &Namespace) -> Result<()> {
        self.inner.housekeeping(ns).await
    }

    async fn wait_for_work(&self, ns: &Namespace, max_wait: Duration) -> Result<()> {
        self.inner.wait_for_work(ns, max_wait).await
    }
}
