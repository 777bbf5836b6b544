//! [`Recorded`]: a `Storage` that forwards every call to the real store and
//! writes what claims, finishes and heartbeats answered to the ledger, so
//! the checker sees refused stale writes and lost leases, not only what the
//! handler saw.

use std::time::Duration;

use executor_core::{
    Error, Finish, Heartbeat, Lease, Namespace, Result, Storage, TaskRecord, TaskState, WorkerId,
    testing::{Intercept, Intercepted},
};

use crate::ledger::{Event, Ledger, now_ms};

/// A store whose claims, finishes and heartbeats are recorded:
/// `Recorded::new(store, Recorder::new(ledger))`.
pub type Recorded<S> = Intercepted<S, Recorder>;

/// The hooks of [`Recorded`]: write each answer to the ledger, tagged with
/// this process's id.
#[derive(Debug)]
pub struct Recorder {
    ledger: Ledger,
    pid: u32,
}

impl Recorder {
    /// Records into `ledger`.
    pub fn new(ledger: Ledger) -> Self {
        Self { ledger, pid: std::process::id() }
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

impl<S: Storage> Intercept<S> for Recorder {
    async fn claim(
        &self,
        inner: &S,
        ns: &Namespace,
        worker: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let r = inner.claim(ns, worker, limit, lease).await;
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

    async fn heartbeat(
        &self,
        inner: &S,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> Result<Heartbeat> {
        let r = inner.heartbeat(ns, leases, lease).await;
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

    async fn finish(&self, inner: &S, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        let target = finish.target();
        let r = inner.finish(ns, lease, finish).await;
        self.finished(lease, target, &r);
        r
    }

    async fn finish_many(
        &self,
        inner: &S,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        let keys: Vec<(Lease, TaskState)> = items.iter().map(|(l, f)| (l.clone(), f.target())).collect();
        let r = inner.finish_many(ns, items).await;
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
}
