//! Redis stops and comes back during use: submits fail with a clear,
//! retryable error while it is down (no hang), and claims resume within a
//! second of it answering again. Runs its own redis-server on a free
//! loopback port in a temp dir (AOF with `appendfsync always`, so a killed
//! server loses nothing that was acknowledged).

use std::time::{Duration, Instant};

use executor_core::{QueueName, WorkerId, queue::ClaimPlan, storage::Storage, testing};
use fred::interfaces::ClientLike;
use reliable_executor_redis::RedisStorage;

use crate::common::server::Server;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_errors_while_down_and_claims_resume_after_restart() -> TestResult {
    let _serial = crate::common::serial().await;
    let mut server = Server::started("restart", &["--appendonly", "yes", "--appendfsync", "always"]).await;
    let url = server.url();
    let storage = RedisStorage::builder(&url).command_timeout(Duration::from_secs(2)).connect().await?;
    let ns = testing::unique_namespace("restart");
    let worker = WorkerId::generate();
    for i in 0..5 {
        storage.submit(&ns, testing::new_task(&format!("before-{i}"))).await?;
    }
    let running = storage.claim(&ns, &worker, &ClaimPlan::default_queue(2), Duration::from_secs(60)).await?;
    assert_eq!(running.len(), 2);

    server.kill();
    let started = Instant::now();
    let err = storage.submit(&ns, testing::new_task("while-down")).await.err().ok_or("submit succeeded")?;
    let took = started.elapsed();
    eprintln!("submit while Redis is down failed after {took:?}: {err}");
    assert!(err.is_retryable(), "the error is retryable: {err:?}");
    assert!(took < Duration::from_secs(3), "it fails promptly, not after a long hang: {took:?}");
    // Each connection of the pool learns of the drop on its own (the one
    // that answered above may not be the next one used); once they all
    // have, calls fail at once instead of waiting out the command timeout.
    testing::wait_for(Duration::from_secs(3), "every pooled connection to see the drop", || async {
        storage.pool().clients().iter().all(|c| !c.is_connected()).then_some(())
    })
    .await;
    let again = Instant::now();
    let err = storage.submit(&ns, testing::new_task("while-down-2")).await.err().ok_or("submit succeeded")?;
    let took = again.elapsed();
    eprintln!("the next submit failed after {took:?}: {err}");
    assert!(took < Duration::from_millis(500), "once the drop is known, calls fail fast: {took:?}");
    let waited = Instant::now();
    let _ = storage.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(5)).await;
    assert!(waited.elapsed() < Duration::from_secs(3), "wait_for_work does not hang while down");

    server.spawn();
    server.wait_until_up().await;
    let back = Instant::now();
    let claimed = testing::wait_for(Duration::from_secs(5), "a claim after the restart", || {
        let (storage, ns, worker) = (&storage, &ns, &worker);
        async move {
            storage
                .claim(ns, worker, &ClaimPlan::default_queue(10), Duration::from_secs(60))
                .await
                .ok()
                .filter(|c| !c.is_empty())
        }
    })
    .await;
    let resumed = back.elapsed();
    eprintln!("claims resumed {resumed:?} after Redis answered again ({} tasks)", claimed.len());
    assert!(resumed < Duration::from_secs(1), "claims resume within a second: {resumed:?}");
    assert_eq!(claimed.len(), 3, "the three waiting tasks survived the restart");
    let leases: Vec<_> = running.iter().chain(&claimed).filter_map(|t| t.lease()).collect();
    let beat = storage.heartbeat(&ns, &leases, Duration::from_secs(60)).await?;
    assert!(beat.lost.is_empty(), "leases taken before the restart still hold: {beat:?}");
    storage.submit(&ns, testing::new_task("after")).await?;
    Ok(())
}
