//! [`Recorded`]: a `Storage` that forwards every call to the real store and
//! writes what claims, finishes and heartbeats answered to the ledger, so
//! the checker sees refused stale writes and lost leases, not only what the
//! handler saw.

use std::{
    future::Future,
    ops::RangeInclusive,
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::Poll,
    time::Duration,
};

use executor_core::{
    Error, Namespace, Result, TaskRecord, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Heartbeat, Lease, Storage},
    testing::{Intercept, Intercepted},
};

use crate::{
    ledger::{Event, Ledger, now_ms},
    server::Backend,
};

/// A store whose claims, finishes and heartbeats are recorded:
/// `Recorded::new(store, Recorder::new(ledger))`.
pub type Recorded<S> = Intercepted<S, Recorder>;

/// The hooks of [`Recorded`]: write each answer to the ledger, tagged with
/// this process's id.
#[derive(Debug)]
pub struct Recorder {
    ledger: Ledger,
    pid: u32,
    claim_stop: Option<ClaimStop>,
}

/// A pause of this very process inside a claim (`chaos worker
/// --claim-stop-ms`): once armed (the controller sends `SIGUSR1`), the
/// next claim call is polled until one of its first replies is pending,
/// then the process `SIGSTOP`s itself for `pause` (a helper shell sends
/// `SIGCONT`). On MariaDB the claim's transaction is then open with its
/// rows locked, as when a worker is stopped at the worst moment; on
/// PostgreSQL its claim statement is in flight (the server commits it and
/// the tasks wait, leased to a stopped worker, for the reaper).
#[derive(Clone, Debug)]
pub struct ClaimStop {
    /// Set to pause in the next claim; cleared when the pause happens.
    pub armed: Arc<AtomicBool>,
    /// How long to stay stopped.
    pub pause: Duration,
    /// The pending replies to stop at, one picked at random per claim
    /// ([`ClaimStop::replies_of`]).
    pub replies: RangeInclusive<u32>,
}

impl ClaimStop {
    /// Which pending reply of a claim on `backend` to stop at. MariaDB:
    /// replies 1-2 are usually the pool and the transaction's start, 3-5
    /// come after its locking read. PostgreSQL: a claim is one statement on
    /// a connection the storage kept, so its first pending reply is usually
    /// the statement's (a connection idle for a while is pinged first, one
    /// more); a claim that ends before the picked reply arms the next one.
    pub fn replies_of(backend: Backend) -> RangeInclusive<u32> {
        match backend {
            Backend::Postgres => 1..=2,
            _ => 2..=5,
        }
    }
}

impl Recorder {
    /// Records into `ledger`.
    pub fn new(ledger: Ledger) -> Self {
        Self { ledger, pid: std::process::id(), claim_stop: None }
    }

    /// Also pauses inside a claim when `stop` is armed.
    pub fn with_claim_stop(mut self, stop: ClaimStop) -> Self {
        self.claim_stop = Some(stop);
        self
    }

    /// Polls `claim` and stops this process while its `at`-th reply is
    /// pending; re-arms if the claim finished first.
    async fn claim_paused<F: Future<Output = Result<Vec<TaskRecord>>>>(
        &self,
        claim: F,
        stop: &ClaimStop,
    ) -> Result<Vec<TaskRecord>> {
        let at = rand::random_range(stop.replies.clone());
        let (mut pending, mut stopped) = (0, false);
        let mut claim = std::pin::pin!(claim);
        let r = std::future::poll_fn(|cx| match claim.as_mut().poll(cx) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => {
                pending += 1;
                if pending == at {
                    stopped = self.stop_self(stop.pause, at);
                }
                Poll::Pending
            }
        })
        .await;
        if !stopped {
            stop.armed.store(true, Ordering::SeqCst);
        }
        r
    }

    /// `SIGSTOP`s this process for `pause` through a helper shell and
    /// blocks this thread (the claim's only poller) until it has resumed.
    fn stop_self(&self, pause: Duration, reply: u32) -> bool {
        let pid = self.pid;
        let note = |kind: &str, note: String| {
            self.ledger.record(&Event::Fault { kind: kind.to_owned(), pid: Some(pid), t: now_ms(), note });
        };
        // Written first: the stop may land before anything else runs.
        note(
            "claim_stop",
            format!("SIGSTOP itself while reply {reply} of a claim was pending, for {pause:?}"),
        );
        let helper = Command::new("sh")
            .arg("-c")
            .arg(format!("kill -STOP {pid}; sleep {:.3}; kill -CONT {pid}", pause.as_secs_f64()))
            .stdin(Stdio::null())
            .spawn();
        let mut helper = match helper {
            Ok(h) => h,
            Err(e) => {
                note("claim_cont", format!("not stopped: cannot start the helper shell: {e}"));
                return false;
            }
        };
        // Stopped during this wait; the helper exits right after SIGCONT.
        let _ = helper.wait();
        note("claim_cont", "resumed by the helper's SIGCONT".to_owned());
        true
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
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let r = match &self.claim_stop {
            Some(stop) if stop.armed.swap(false, Ordering::SeqCst) => {
                self.claim_paused(inner.claim(ns, worker, plan, lease), stop).await
            }
            _ => inner.claim(ns, worker, plan, lease).await,
        };
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
