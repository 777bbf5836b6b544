//! Found by the chaos soak (MySQL, `SIGSTOP` faults): a worker paused
//! between receiving its claim and starting the handler starts the handler
//! on a lease that expired meanwhile, while the task already runs elsewhere.
//! The late write is refused, but the two handlers run at the same time
//! until the paused worker's next heartbeat (invariant 2). Cause: the
//! runtime computes the lease's local expiry from the attempt's start
//! (`executor-core/src/executor/attempt.rs`, `run`: `claimed_at =
//! Instant::now()`, `lease_expires: claimed_at + lease`) instead of from
//! when the claim was sent, and starts the handler without checking it.
//! Here a store whose claim reply is delayed past the lease stands in for
//! the pause. Fixed: the runtime refuses to start an attempt
//! whose lease may have run out.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_core::{
    CancelOutcome, Executor, Finish, Handler, Heartbeat, Leadership, Lease, ListQuery, MemoryStorage,
    Namespace, NewTask, Page, Reaped, Result, Retention, StateCounts, Storage, Submitted, TaskBuilder,
    TaskContext, TaskError, TaskId, TaskOptions, TaskRecord, TaskState, WorkerId,
};

/// Delays the first non-empty claim reply by `delay` (a process paused
/// after the store answered).
struct SlowClaim {
    inner: MemoryStorage,
    delay: Duration,
    delayed: AtomicBool,
}

impl Storage for SlowClaim {
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
        let got = self.inner.claim(ns, w, limit, lease).await?;
        if !got.is_empty() && !self.delayed.swap(true, Ordering::SeqCst) {
            tokio::time::sleep(self.delay).await;
        }
        Ok(got)
    }
    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.inner.heartbeat(ns, leases, lease).await
    }
    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        self.inner.finish(ns, lease, finish).await
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
        w: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.inner.acquire_leadership(ns, w, ttl).await
    }
    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        self.inner.release_leadership(ns, term).await
    }
    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        self.inner.leader(ns).await
    }
    async fn wait_for_work(&self, ns: &Namespace, max_wait: Duration) -> Result<()> {
        self.inner.wait_for_work(ns, max_wait).await
    }
}

fn handler(running: Arc<AtomicUsize>, most: Arc<AtomicUsize>) -> Handler {
    Handler::new("stale_step", move |_: u64, _: TaskContext| {
        let (running, most) = (Arc::clone(&running), Arc::clone(&most));
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // Decrement even when the runtime aborts this future.
            struct Dec(Arc<AtomicUsize>);
            impl Drop for Dec {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, Ordering::SeqCst);
                }
            }
            let _dec = Dec(running);
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            Ok::<(), TaskError>(())
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_delivered_after_its_lease_expired_is_not_started() -> Result<(), Box<dyn std::error::Error>>
{
    let store = MemoryStorage::new();
    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let slow = SlowClaim {
        inner: store.clone(),
        delay: Duration::from_millis(2_500),
        delayed: AtomicBool::new(false),
    };
    let paused = Executor::builder(slow)
        .namespace("stale-start")
        .worker_id("paused")
        .lease(Duration::from_secs(1))
        .heartbeat_interval(Duration::from_millis(250))
        .housekeeping_interval(Duration::from_millis(100))
        .handler(handler(Arc::clone(&running), Arc::clone(&most)))
        .build()
        .await?;
    let other = Executor::builder(store.clone())
        .namespace("stale-start")
        .worker_id("other")
        .lease(Duration::from_secs(1))
        .heartbeat_interval(Duration::from_millis(250))
        .housekeeping_interval(Duration::from_millis(100))
        .handler(handler(Arc::clone(&running), Arc::clone(&most)))
        .build()
        .await?;
    let id = TaskBuilder::new("stale_step", 1u64, TaskOptions::new().retry_limit(5)).submit(&paused).await?;
    let a = paused.start();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let b = other.start();
    let rec = other.wait_for(&id, Duration::from_secs(15)).await?;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    a.shutdown().await?;
    b.shutdown().await?;
    println!(
        "final: {:?} fence {}; most attempts running at once: {}",
        rec.state,
        rec.fence,
        most.load(Ordering::SeqCst)
    );
    assert_eq!(rec.state, TaskState::Completed);
    assert_eq!(most.load(Ordering::SeqCst), 1, "two attempts of one task ran at the same time");
    Ok(())
}
