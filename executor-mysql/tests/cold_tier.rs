//! MySQL as the cold tier of `TieredStorage` (the seed's layout: long
//! delays wait in MySQL and move to the hot store shortly before they are
//! due), with an in-memory hot tier.

mod support;

use std::time::Duration;

use executor_core::{Due, MemoryStorage, Storage, TieredStorage, testing};
use support::{cleanup, fresh};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_delays_wait_in_mysql_and_move_to_hot_before_due() -> TestResult {
    let (cold, ns) = fresh().await;
    let hot = MemoryStorage::new();
    let tiered = TieredStorage::new(hot.clone(), cold.clone()).horizon(Duration::from_millis(500));
    let mut later = testing::new_task("later");
    later.due = Due::After(Duration::from_millis(1500));
    let submitted = tokio::time::Instant::now();
    let id = tiered.submit(&ns, later).await?.id;
    assert!(cold.get(&ns, &id).await?.is_some(), "a long delay is stored in MySQL");
    assert!(hot.get(&ns, &id).await?.is_none());

    // Nothing moves while the task is beyond the horizon.
    assert_eq!(tiered.promote(&ns).await?, 0);
    let moved_at = loop {
        if tiered.promote(&ns).await? == 1 {
            break submitted.elapsed();
        }
        assert!(submitted.elapsed() < Duration::from_secs(5), "never promoted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Due 1.5 s after submit, horizon 0.5 s: it moves about 1 s after submit.
    assert!(moved_at >= Duration::from_millis(950), "promoted {moved_at:?} after submit, before the horizon");
    assert!(cold.get(&ns, &id).await?.is_none(), "the cold copy is removed");
    let hot_copy = hot.get(&ns, &id).await?.ok_or("not in hot")?;
    assert_eq!(hot_copy.payload, br#"{"n":1}"#.to_vec());
    cleanup(&cold, &ns).await;
    hot.remove_namespace(&ns);
    Ok(())
}
