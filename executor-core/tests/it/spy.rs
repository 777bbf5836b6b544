//! A storage wrapper that records what the runtime asks of the store.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_core::{
    MemoryStorage, Namespace, Result, TaskRecord, TaskState, WorkerId,
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
}

impl Intercept<MemoryStorage> for Watch {
    async fn claim(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        w: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.claim_limits.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(limit);
        let got = inner.claim(ns, w, limit, lease).await?;
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
        let results = inner.finish_many(ns, items).await?;
        self.running.fetch_sub(results.iter().filter(|r| r.is_ok()).count(), Ordering::SeqCst);
        Ok(results)
    }
}
