//! Invariant 9 for the one transaction that waits for its client while it
//! holds a lock: the limited claim's lock on its queue's row. A session
//! stopped inside that transaction (as a SIGSTOPped process would be) loses
//! it after 2 s idle, and other claimers take the queue's tasks again.

use executor_core::storage::QueueControl;
use std::time::Duration;

use executor_core::{
    QueueName, WorkerId,
    queue::{ClaimPlan, QueueLimits},
    storage::Storage,
    testing,
};
use tokio::time::Instant;

use crate::support::{cleanup, fresh};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_stopped_inside_the_limited_claim_is_cut_off_after_two_seconds() -> TestResult {
    let (s, ns) = fresh().await;
    let queue = QueueName::new("limited")?;
    s.set_queue_limits(&ns, &queue, &QueueLimits::new().concurrency(5)).await?;
    for i in 0..3 {
        let mut t = testing::new_task(&format!("l{i}"));
        t.queue = queue.clone();
        s.submit(&ns, t).await?;
    }
    // What the limited claim does first, then nothing: the process stopped.
    let mut stuck = s.pool().acquire().await?;
    sqlx::raw_sql("BEGIN; SET LOCAL idle_in_transaction_session_timeout = '2s'").execute(&mut *stuck).await?;
    sqlx::query("SELECT paused FROM reliable_executor_queues WHERE ns = $1 AND queue = $2 FOR UPDATE")
        .bind(ns.as_str())
        .bind(queue.as_str())
        .fetch_one(&mut *stuck)
        .await?;
    let stopped = Instant::now();
    let plan = ClaimPlan::single(queue.clone(), 10);
    let worker = WorkerId::generate();
    // Meanwhile the queue is busy: claims take nothing and do not wait long.
    let started = Instant::now();
    let first = s.claim(&ns, &worker, &plan, Duration::from_secs(30)).await?;
    assert!(first.is_empty(), "claimed under another claimer's lock: {first:?}");
    assert!(started.elapsed() < Duration::from_secs(1), "a claim waited {:?} for the row", started.elapsed());
    let claimed = loop {
        let got = s.claim(&ns, &worker, &plan, Duration::from_secs(30)).await?;
        if !got.is_empty() {
            break got;
        }
        assert!(stopped.elapsed() < Duration::from_secs(15), "the stopped holder kept the queue");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let freed_after = stopped.elapsed();
    assert_eq!(claimed.len(), 3);
    assert!(freed_after >= Duration::from_secs(2), "freed after {freed_after:?}: before the bound?");
    // The server ended the stopped session.
    assert!(sqlx::query("SELECT 1").execute(&mut *stuck).await.is_err(), "the stopped session lives on");
    stuck.close_on_drop();
    eprintln!("the queue was free again {freed_after:?} after its holder stopped");
    cleanup(&s, &ns).await;
    Ok(())
}
