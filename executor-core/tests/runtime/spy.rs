//! A storage wrapper that records what the runtime asks of the store.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_core::{
    CancelOutcome, Finish, Heartbeat, Leadership, Lease, ListQuery, MemoryStorage, Namespace, NewTask, Page,
    Reaped, Result, Retention, StateCounts, Storage, Submitted, TaskId, TaskRecord, TaskState, WorkerId,
};

#[derive(Clone, Debug, Default)]
pub(crate) struct Spy {
    pub(crate) inner: MemoryStorage,
    /// `limit` of every claim call.
    pub(crate) claim_limits: Arc<Mutex<Vec<usize>>>,
    /// Tasks claimed and not yet finished.
    pub(crate) running: Arc<AtomicUsize>,
    pub(crate) max_running: Arc<AtomicUsize>,
    /// Make every heartbeat report its leases lost.
    pub(crate) lose_leases: Arc<AtomicBool>,
}

impl Storage for Spy {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.inner.submit(ns, task).await
    }
    async fn claim(
        &self,
        ns: &Namespace,
        w: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.claim_limits.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(limit);
        let got = self.inner.claim(ns, w, limit, lease).await?;
        let now = self.running.fetch_add(got.len(), Ordering::SeqCst) + got.len();
        self.max_running.fetch_max(now, Ordering::SeqCst);
        Ok(got)
    }
    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        if self.lose_leases.load(Ordering::SeqCst) {
            return Ok(Heartbeat {
                lost: leases.iter().map(|l| l.id.clone()).collect(),
                cancel_requested: vec![],
            });
        }
        self.inner.heartbeat(ns, leases, lease).await
    }
    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        let r = self.inner.finish(ns, lease, finish).await;
        if r.is_ok() {
            self.running.fetch_sub(1, Ordering::SeqCst);
        }
        r
    }
    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        self.inner.cancel(ns, id).await
    }
    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        self.inner.get(ns, id).await
    }
    async fn list(&self, ns: &Namespace, q: ListQuery) -> Result<Page> {
        self.inner.list(ns, q).await
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
    async fn trim(&self, ns: &Namespace, r: &Retention, limit: usize) -> Result<u64> {
        self.inner.trim(ns, r, limit).await
    }
    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        w: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.inner.acquire_leadership(ns, w, ttl).await
    }
    async fn release_leadership(&self, ns: &Namespace, t: &Leadership) -> Result<()> {
        self.inner.release_leadership(ns, t).await
    }
    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        self.inner.leader(ns).await
    }
    async fn wait_for_work(&self, ns: &Namespace, max_wait: Duration) -> Result<()> {
        self.inner.wait_for_work(ns, max_wait).await
    }
}
