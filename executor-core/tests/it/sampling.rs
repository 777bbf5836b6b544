//! The leader's sampling of the task counts costs the store at most 5 % of
//! one connection's time, however short `counts_interval` is: a SQL store
//! counts by scanning the namespace (0.7 s with a million tasks retained on
//! MariaDB), and sampling that every interval would keep a connection
//! scanning all the time.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use reliable_executor::{
    Executor, MemoryStorage, Namespace, Result,
    query::StateCounts,
    storage::Storage,
    testing::{Intercept, Intercepted},
};

/// Counts that take one second to read, and how many were read.
#[derive(Debug, Default)]
struct SlowCounts(Arc<AtomicUsize>);

impl<S: Storage> Intercept<S> for SlowCounts {
    async fn counts(&self, inner: &S, ns: &Namespace) -> Result<StateCounts> {
        self.0.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(1)).await;
        inner.counts(ns).await
    }
}

#[tokio::test(start_paused = true)]
async fn slow_counts_are_sampled_at_most_five_percent_of_the_time() -> Result<()> {
    let calls = Arc::new(AtomicUsize::new(0));
    let store = Intercepted::new(MemoryStorage::new(), SlowCounts(Arc::clone(&calls)));
    let ex = Executor::builder(store)
        .namespace("sampling-test")
        .housekeeping_interval(Duration::from_millis(100))
        .counts_interval(Duration::from_millis(100))
        .build()
        .await?;
    let running = ex.start();
    // Ten minutes of (paused, auto-advancing) time: sampled every interval,
    // a one-second read would be repeated about 550 times; at most 5 % of
    // the time allows one read per 21 s, 29 in ten minutes.
    tokio::time::sleep(Duration::from_secs(600)).await;
    running.shutdown().await?;
    let n = calls.load(Ordering::SeqCst);
    eprintln!("counts read {n} times in 600 s at 1 s each (every interval: 601)");
    assert!((20..=30).contains(&n), "counts read {n} times in 600 s at 1 s each");
    Ok(())
}
