//! The executor's throughput history on MemoryStorage with
//! tokio's paused clock: every attempt's end is counted once, by name, as
//! succeeded or failed (error, panic, timeout); a failing flush keeps its
//! counts for the next one; the store hears one call per interval, not one
//! per task, and a last one at shutdown; the leader trims old minutes.

use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use reliable_executor::{
    Error, Executor, ExecutorBuilder, Handler, MemoryStorage, Namespace, Result, TaskBuilder, TaskContext,
    TaskError, TaskOptions, Timestamp,
    storage::{HistoryCount, HistoryStore},
    testing::{self, Intercept, Intercepted},
};

/// Fails the first `fail` flushes (a retryable store error), then passes
/// them on; records every call.
#[derive(Debug, Default)]
struct Flushes {
    fail: AtomicUsize,
    calls: Mutex<Vec<(bool, Vec<HistoryCount>)>>,
}

impl Flushes {
    fn calls(&self) -> Vec<(bool, Vec<HistoryCount>)> {
        self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl<S: HistoryStore> Intercept<S> for Flushes {
    async fn add_history(&self, inner: &S, ns: &Namespace, counts: &[HistoryCount]) -> Result<()> {
        let failing =
            self.fail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((!failing, counts.to_vec()));
        if failing {
            return Err(Error::storage(std::io::Error::other("the store is away"), true));
        }
        inner.add_history(ns, counts).await
    }
}

type Store = Intercepted<MemoryStorage, Flushes>;

fn builder(store: Store) -> ExecutorBuilder<Store> {
    Executor::builder(store)
        .namespace("history-test")
        .lease(Duration::from_secs(2))
        .heartbeat_interval(Duration::from_millis(500))
        .housekeeping_interval(Duration::from_millis(200))
        .max_idle_wait(Duration::from_millis(500))
        .handler(Handler::new("ok", |_: u32, _ctx: TaskContext| async {}))
        .handler(
            Handler::new("bad", |_: u32, _ctx: TaskContext| async { Err::<(), _>(TaskError::abort("no")) })
                .options(TaskOptions::new().retry_limit(0)),
        )
        .handler(
            Handler::new("panics", |_: u32, _ctx: TaskContext| async {
                if true {
                    panic!("boom");
                }
            })
            .options(TaskOptions::new().retry_limit(0)),
        )
        .handler(
            Handler::new("slow", |_: u32, _ctx: TaskContext| async {
                tokio::time::sleep(Duration::from_secs(3_600)).await;
            })
            .options(TaskOptions::new().retry_limit(1).timeout(Duration::from_secs(1))),
        )
}

/// Succeeded and failed per name in the store, summed over minutes.
async fn totals(store: &Store) -> BTreeMap<String, (u64, u64)> {
    let ns = Namespace::new("history-test").unwrap_or_else(|e| panic!("{e}"));
    let mut out = BTreeMap::new();
    for b in store.history(&ns, Timestamp::default()).await.unwrap_or_default() {
        let e: &mut (u64, u64) = out.entry(b.name).or_default();
        e.0 += b.succeeded;
        e.1 += b.failed;
    }
    out
}

fn expected(items: &[(&str, u64, u64)]) -> BTreeMap<String, (u64, u64)> {
    items.iter().map(|(n, s, f)| ((*n).to_owned(), (*s, *f))).collect()
}

async fn submit_all(ex: &Executor<Store>, items: &[(&str, u32)]) -> Result<()> {
    for (name, n) in items {
        // The handler's own defaults (retries, timeout), as its typed helper would use.
        let defaults = ex.registry().get(name).map(|h| h.default_options().clone()).unwrap_or_default();
        for i in 0..*n {
            TaskBuilder::new(*name, i, defaults.clone()).submit(ex).await?;
        }
    }
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn each_end_is_counted_once_and_a_failed_flush_is_kept() -> Result<()> {
    let hooks = Flushes { fail: AtomicUsize::new(2), ..Flushes::default() };
    let store = Intercepted::new(MemoryStorage::new(), hooks);
    let ex = builder(store).history_interval(Duration::from_millis(100)).build().await?;
    let running = ex.start();
    submit_all(&ex, &[("ok", 3), ("bad", 2), ("panics", 1), ("slow", 1)]).await?;
    // `slow` times out twice (two attempts), each a failed attempt.
    let want = expected(&[("bad", 0, 2), ("ok", 3, 0), ("panics", 0, 1), ("slow", 0, 2)]);
    let store = ex.client().storage();
    testing::wait_until(Duration::from_secs(30), || async { totals(store).await == want }).await;
    let calls = store.hooks().calls();
    assert!(calls.len() >= 3, "two failed flushes, then one that passed: {calls:?}");
    assert!(!calls[0].0 && !calls[1].0, "the first two failed: {calls:?}");
    running.shutdown().await?;
    assert_eq!(totals(store).await, want, "nothing counted twice, nothing lost, after shutdown too");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_store_hears_one_call_per_interval_not_one_per_task() -> Result<()> {
    let store = Intercepted::new(MemoryStorage::new(), Flushes::default());
    // A day between flushes: only the one at shutdown can write.
    let ex = builder(store).history_interval(Duration::from_secs(86_400)).build().await?;
    let running = ex.start();
    submit_all(&ex, &[("ok", 20), ("bad", 5)]).await?;
    let store = ex.client().storage();
    testing::wait_until(Duration::from_secs(30), || async {
        ex.counts().await.is_ok_and(|c| c.get(reliable_executor::TaskState::Completed) == 20)
            && ex.counts().await.is_ok_and(|c| c.get(reliable_executor::TaskState::Failed) == 5)
    })
    .await;
    assert!(store.hooks().calls().is_empty(), "no store call while tasks run");
    running.shutdown().await?;
    let calls = store.hooks().calls();
    assert_eq!(calls.len(), 1, "one flush at shutdown: {calls:?}");
    assert_eq!(calls[0].1, [HistoryCount::new("bad", 0, 5), HistoryCount::new("ok", 20, 0)]);
    assert_eq!(totals(store).await, expected(&[("bad", 0, 5), ("ok", 20, 0)]));
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn without_history_the_store_hears_nothing() -> Result<()> {
    let store = Intercepted::new(MemoryStorage::new(), Flushes::default());
    let ex = builder(store).without_history().build().await?;
    let running = ex.start();
    submit_all(&ex, &[("ok", 3)]).await?;
    testing::wait_until(Duration::from_secs(30), || async {
        ex.counts().await.is_ok_and(|c| c.get(reliable_executor::TaskState::Completed) == 3)
    })
    .await;
    running.shutdown().await?;
    assert!(ex.client().storage().hooks().calls().is_empty());
    assert!(totals(ex.client().storage()).await.is_empty());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_leader_trims_minutes_older_than_the_keep_period() -> Result<()> {
    let refused = builder(Intercepted::new(MemoryStorage::new(), Flushes::default()))
        .history_keep(Duration::from_secs(59))
        .build()
        .await;
    assert!(matches!(refused, Err(Error::Invalid { .. })), "a keep under a minute is refused: {refused:?}");

    let store = Intercepted::new(MemoryStorage::new(), Flushes::default());
    let ns = Namespace::new("history-test")?;
    store.add_history(&ns, &[HistoryCount::new("old", 1, 0)]).await?;
    let ex = builder(store)
        .history_keep(Duration::from_secs(120))
        .trim_interval(Duration::from_millis(500))
        .build()
        .await?;
    let running = ex.start();
    let store = ex.client().storage();
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(totals(store).await, expected(&[("old", 1, 0)]), "kept while younger than the keep period");
    testing::wait_until(Duration::from_secs(240), || async { totals(store).await.is_empty() }).await;
    running.shutdown().await?;
    Ok(())
}
