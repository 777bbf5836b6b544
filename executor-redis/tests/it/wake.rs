//! The wake-up watcher (`BZPOPMIN` on the namespace's marker, blocking 1 s
//! at a time) on an idle namespace: its own block running out is no wake-up.
//! fred reports BZPOPMIN's nil reply as a `Timeout` error; taken for an
//! outage, it woke every waiter each second and then left the marker
//! unwatched for 100 ms, so a task submitted just after an idle second
//! started up to 100 ms late (seen as a p99 start lag of 105 ms over 1,000
//! ticks of a per-second cron schedule, against 4 ms after the fix).

use std::time::{Duration, Instant};

use executor_core::{QueueName, TaskBuilder, TaskOptions, storage::Storage};

use crate::common;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_wait_runs_to_max_wait_through_the_watchers_timeouts() -> TestResult {
    let (storage, ns) = common::fresh().await;
    let started = Instant::now();
    // Three of the watcher's one-second blocks run out meanwhile.
    storage.wait_for_work(&ns, &[QueueName::default()], Duration::from_millis(3_200)).await?;
    let waited = started.elapsed();
    common::cleanup(&storage, &ns).await;
    assert!(waited >= Duration::from_millis(3_000), "woken after {waited:?} with nothing submitted");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_after_an_idle_second_wakes_the_waiter() -> TestResult {
    let (storage, ns) = common::fresh().await;
    // A first wait lets the watcher start and run out one block.
    storage.wait_for_work(&ns, &[QueueName::default()], Duration::from_millis(1_300)).await?;
    let waiter = {
        let (storage, ns) = (storage.clone(), ns.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            storage
                .wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(30))
                .await
                .map(|()| started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let task = TaskBuilder::new("wake", (), TaskOptions::new()).into_new_task()?;
    storage.submit(&ns, task).await?;
    // Woken by the submit, not by its 30 s max_wait.
    let woken = tokio::time::timeout(Duration::from_secs(10), waiter).await;
    common::cleanup(&storage, &ns).await;
    let waited = woken.map_err(|_| "the submit did not wake the waiter within 10 s")???;
    println!("woken {waited:?} after the submit's wait began");
    Ok(())
}
