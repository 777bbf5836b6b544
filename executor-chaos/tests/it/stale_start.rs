//! Found by the chaos soak (MySQL, `SIGSTOP` faults): a worker paused
//! between receiving its claim and starting the handler starts the handler
//! on a lease that expired meanwhile, while the task already runs elsewhere.
//! The late write is refused, but the two handlers run at the same time
//! until the paused worker's next heartbeat (no two live attempts). Cause: the
//! runtime computes the lease's local expiry from the attempt's start
//! (`executor-core/src/runtime/executor/attempt.rs`, `run`: `claimed_at =
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
    Executor, Handler, MemoryStorage, Namespace, Result, TaskBuilder, TaskContext, TaskError, TaskOptions,
    TaskRecord, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::Storage,
    testing::{Intercept, Intercepted},
};

/// Delays the first non-empty claim reply by `delay` (a process paused
/// after the store answered).
struct SlowClaim {
    delay: Duration,
    delayed: AtomicBool,
}

impl Intercept<MemoryStorage> for SlowClaim {
    async fn claim(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        w: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let got = inner.claim(ns, w, plan, lease).await?;
        if !got.is_empty() && !self.delayed.swap(true, Ordering::SeqCst) {
            tokio::time::sleep(self.delay).await;
        }
        Ok(got)
    }
}

/// An executor of the test's namespace with a 1 s lease, named `worker`.
async fn executor<S: executor_core::storage::ExecutorStorage>(
    store: S,
    worker: &str,
    running: &Arc<AtomicUsize>,
    most: &Arc<AtomicUsize>,
) -> Result<Executor<S>> {
    Executor::builder(store)
        .namespace("stale-start")
        .worker_id(worker)
        .lease(Duration::from_secs(1))
        .heartbeat_interval(Duration::from_millis(250))
        .housekeeping_interval(Duration::from_millis(100))
        .handler(handler(Arc::clone(running), Arc::clone(most)))
        .build()
        .await
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
    let _one = crate::common::one_at_a_time_async().await;
    let store = MemoryStorage::new();
    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let slow = Intercepted::new(
        store.clone(),
        SlowClaim { delay: Duration::from_millis(2_500), delayed: AtomicBool::new(false) },
    );
    let paused = executor(slow, "paused", &running, &most).await?;
    let other = executor(store.clone(), "other", &running, &most).await?;
    let id =
        TaskBuilder::new("stale_step", 1u64, TaskOptions::new().retry_limit(5)).submit(&paused).await?.id;
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
