//! The wake-up latency between processes that share no in-process signal.

use std::time::Duration;

use executor_core::{QueueName, WorkerId, queue::ClaimPlan, storage::Storage, testing};
use reliable_executor_mysql::{MySqlOptions, MySqlStorage};
use tokio::time::Instant;

use crate::support::{cleanup, pool};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A submit from another process (its own storage, so no shared `Notify`)
/// is seen within the poll interval's ceiling of its commit; a submit in
/// the same process wakes the waiter at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wake_latency_within_and_across_processes() -> TestResult {
    let _serial = crate::support::serial().await;
    let poll_max = Duration::from_millis(250);
    let opts = || MySqlOptions::new().max_connections(2).poll_interval(Duration::from_millis(5), poll_max);
    let waiter: MySqlStorage = opts().open(pool(2).await).await?;
    let other: MySqlStorage = opts().open(pool(2).await).await?;
    let ns = testing::unique_namespace("my-wake");
    let me = WorkerId::generate();

    let mut across = Vec::new();
    let mut within = Vec::new();
    for round in 0..6 {
        let (submitter, into) = if round % 2 == 0 { (&other, &mut across) } else { (&waiter, &mut within) };
        let id = format!("w{round}");
        let wait = async {
            let start = Instant::now();
            waiter.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(5)).await?;
            let woke = Instant::now();
            Ok::<_, executor_core::Error>((woke - start, woke))
        };
        let submit = async {
            // Long enough for the waiter to back off to its longest interval.
            tokio::time::sleep(Duration::from_millis(600)).await;
            submitter.submit(&ns, testing::new_task(&id)).await?;
            Ok::<_, executor_core::Error>(Instant::now())
        };
        let ((waited, woke), committed) = tokio::try_join!(wait, submit)?;
        // From the commit (the submit returned: the task is there to
        // claim) to the wake. The INSERT's own time (a flushed commit,
        // slow when other tests load the server) is not the wake's; an
        // in-process wake may even come before the submit call returns.
        into.push(woke.saturating_duration_since(committed));
        assert!(waited >= Duration::from_millis(590), "woke before the submit: {waited:?}");
        let claimed = waiter.claim(&ns, &me, &ClaimPlan::default_queue(1), Duration::from_secs(30)).await?;
        assert_eq!(claimed.len(), 1);
    }
    eprintln!("wake after a submit in another process: {across:?}; in the same process: {within:?}");
    for d in &across {
        assert!(*d <= poll_max + Duration::from_millis(150), "cross-process wake took {d:?}");
    }
    for d in &within {
        assert!(*d <= Duration::from_millis(50), "in-process wake took {d:?}");
    }
    cleanup(&waiter, &ns).await;
    Ok(())
}
