//! Retention keeps up: the leader repeats full trim and reap batches within
//! its per-tick budget instead of one batch per interval, so finished tasks
//! and dead workers' leases never pile up faster than they go.

use std::time::Duration;

use reliable_executor::{
    Error, Executor, Handler, MemoryStorage, Namespace, TaskContext, TaskState, WorkerId, query::Retention,
    queue::ClaimPlan, storage::Storage, testing,
};
use tokio::time::Instant;

use crate::support::builder;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Waits (real time) until `done` answers true, at most `within`.
async fn until<F, Fut>(within: Duration, what: &str, mut done: F) -> TestResult
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, Error>>,
{
    let start = Instant::now();
    while !done().await? {
        if start.elapsed() > within {
            return Err(format!("{what}: not within {within:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// 5,000 completed tasks, a trim batch of 100 and a trim interval of an
/// hour: one batch per interval would leave 4,900 for 49 hours; the leader
/// works the backlog off in seconds, tick after tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trim_backlog_is_worked_off_within_the_budget_not_one_batch_per_interval() -> TestResult {
    let store = MemoryStorage::new();
    let ns = Namespace::new("runtime-test")?;
    let worker = WorkerId::generate();
    let tasks: Vec<_> = (0..5_000).map(|i| testing::new_task(&format!("done-{i}"))).collect();
    store.submit_many(&ns, tasks).await?;
    let claimed =
        store.claim(&ns, &worker, &ClaimPlan::default_queue(5_000), Duration::from_secs(60)).await?;
    let items =
        claimed.iter().filter_map(|t| t.lease()).map(|l| (l, reliable_executor::storage::Finish::Completed));
    store.finish_many(&ns, items.collect()).await?;
    assert_eq!(store.counts(&ns).await?.get(TaskState::Completed), 5_000);

    let executor: Executor<MemoryStorage> = builder(store.clone())
        .housekeeping_interval(Duration::from_millis(10))
        .retention(Retention::default().completed(Duration::ZERO))
        .trim_interval(Duration::from_secs(3_600))
        .trim_batch(100)
        .housekeeping_budget(Duration::from_millis(5))
        .handler(Handler::new("conformance", |_: serde_json::Value, _ctx: TaskContext| async {}))
        .build()
        .await?;
    let running = executor.start();
    until(Duration::from_secs(30), "the 5,000 completed tasks trimmed", || async {
        Ok(store.counts(&ns).await?.get(TaskState::Completed) == 0)
    })
    .await?;
    running.shutdown().await?;
    Ok(())
}

/// 3,000 expired leases, a reap batch of 50: all recovered quickly, not 50
/// per housekeeping tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_leases_are_reaped_in_repeated_batches() -> TestResult {
    let store = MemoryStorage::new();
    let ns = Namespace::new("runtime-test")?;
    let tasks: Vec<_> = (0..3_000).map(|i| testing::new_task(&format!("dead-{i}"))).collect();
    store.submit_many(&ns, tasks).await?;
    let claimed = store
        .claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(3_000), Duration::from_millis(100))
        .await?;
    assert_eq!(claimed.len(), 3_000);
    until(Duration::from_secs(5), "the leases to expire", || async {
        Ok(Some(store.now()) > claimed[0].lease_until)
    })
    .await?;

    let executor: Executor<MemoryStorage> = builder(store.clone())
        // A long housekeeping interval: one batch per tick would take
        // 60 ticks, an hour.
        .housekeeping_interval(Duration::from_secs(60))
        .reap_batch(50)
        .housekeeping_budget(Duration::from_secs(10))
        // Nothing is claimed back meanwhile: no handler runs these.
        .concurrency(1)
        .handler(Handler::new("conformance", |_: serde_json::Value, _ctx: TaskContext| async {
            std::future::pending::<()>().await
        }))
        .build()
        .await?;
    let running = executor.start();
    until(Duration::from_secs(20), "3,000 leases reaped", || async {
        Ok(store.counts(&ns).await?.get(TaskState::Running) <= 1)
    })
    .await?;
    running.shutdown().await?;
    Ok(())
}

#[test]
fn budget_and_batches_are_range_checked() -> TestResult {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    for (b, what) in [
        (builder(MemoryStorage::new()).trim_batch(0), "trim_batch"),
        (builder(MemoryStorage::new()).reap_batch(1_000_000), "reap_batch"),
        (builder(MemoryStorage::new()).housekeeping_budget(Duration::ZERO), "housekeeping_budget"),
    ] {
        match rt.block_on(b.build()) {
            Err(Error::Invalid { what: w, .. }) => assert_eq!(w, what),
            other => panic!("{what}: expected Invalid, got {other:?}"),
        }
    }
    Ok(())
}
