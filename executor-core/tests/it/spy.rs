//! A storage wrapper that records what the runtime asks of the store.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use reliable_executor::{
    MemoryStorage, Namespace, Result, TaskRecord, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Heartbeat, Lease, Storage},
    testing::{Intercept, Intercepted},
};

/// A memory store whose claims, heartbeats and finishes go through [`Watch`].
pub(crate) type Spy = Intercepted<MemoryStorage, Watch>;

/// What the runtime asked, and a switch to make it lose its leases.
#[derive(Clone, Debug, Default)]
pub(crate) struct Watch {
    /// `limit` of every claim call.
    pub(crate) claim_limits: Arc<Mutex<Vec<usize>>>,
    /// Tasks claimed and not yet finished.
    pub(crate) running: Arc<AtomicUsize>,
    pub(crate) max_running: Arc<AtomicUsize>,
    /// Make every heartbeat report its leases lost.
    pub(crate) lose_leases: Arc<AtomicBool>,
    /// While set, every finish waits (call [`Watch::let_finishes_through`]).
    pub(crate) hold_finishes: Arc<AtomicBool>,
    /// Finishes waiting behind `hold_finishes` now.
    pub(crate) held: Arc<AtomicUsize>,
    released: Arc<tokio::sync::Notify>,
}

impl Watch {
    /// Clears `hold_finishes` and wakes every finish waiting behind it.
    pub(crate) fn let_finishes_through(&self) {
        self.hold_finishes.store(false, Ordering::SeqCst);
        self.released.notify_waiters();
    }

    async fn gate(&self) {
        self.held.fetch_add(1, Ordering::SeqCst);
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if !self.hold_finishes.load(Ordering::SeqCst) {
                break;
            }
            released.await;
        }
        self.held.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Intercept<MemoryStorage> for Watch {
    async fn claim(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        w: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.claim_limits.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(plan.limit);
        let got = inner.claim(ns, w, plan, lease).await?;
        let now = self.running.fetch_add(got.len(), Ordering::SeqCst) + got.len();
        self.max_running.fetch_max(now, Ordering::SeqCst);
        Ok(got)
    }

    async fn heartbeat(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> Result<Heartbeat> {
        if self.lose_leases.load(Ordering::SeqCst) {
            let mut lost = Heartbeat::default();
            lost.lost = leases.iter().map(|l| l.id.clone()).collect();
            return Ok(lost);
        }
        inner.heartbeat(ns, leases, lease).await
    }

    async fn finish(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        lease: &Lease,
        finish: Finish,
    ) -> Result<TaskState> {
        self.gate().await;
        let r = inner.finish(ns, lease, finish).await;
        if r.is_ok() {
            self.running.fetch_sub(1, Ordering::SeqCst);
        }
        r
    }

    async fn finish_many(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        self.gate().await;
        let results = inner.finish_many(ns, items).await?;
        self.running.fetch_sub(results.iter().filter(|r| r.is_ok()).count(), Ordering::SeqCst);
        Ok(results)
    }
}
