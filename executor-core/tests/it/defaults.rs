//! Defaults that do not surprise: a builder's order does not matter, retry
//! levels and the retry limit agree, a handler can stop its executor.

use std::time::Duration;

use reliable_executor::{
    Error, Handler, MemoryStorage, RetryPolicy, TaskBuilder, TaskContext, TaskOptions, TaskState,
    storage::SubmitMode,
};

use crate::support::builder;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn max_wait_before_or_after_debounce_is_the_same_and_alone_is_refused() -> TestResult {
    let (window, cap) = (Duration::from_secs(5), Duration::from_secs(60));
    let before =
        TaskBuilder::new("t", 1, TaskOptions::new()).max_wait(cap).debounce("k", window).into_new_task()?;
    let after =
        TaskBuilder::new("t", 1, TaskOptions::new()).debounce("k", window).max_wait(cap).into_new_task()?;
    for task in [&before, &after] {
        match &task.mode {
            SubmitMode::Debounce(d) => assert_eq!((d.window, d.max_wait), (window, Some(cap))),
            other => panic!("expected a debounce, got {other:?}"),
        }
    }
    match TaskBuilder::new("t", 1, TaskOptions::new()).max_wait(cap).into_new_task() {
        Err(Error::Invalid { what: "max_wait", reason }) => assert!(reason.contains("debounce"), "{reason}"),
        other => panic!("max_wait without debounce: expected Invalid, got {other:?}"),
    }
    Ok(())
}

#[test]
fn retry_levels_set_the_limit_unless_it_is_set_and_a_lower_limit_is_refused() -> TestResult {
    let levels = RetryPolicy::levels([10, 60, 600, 3_600].map(Duration::from_secs))?;
    // Levels alone: four retries, each level used once.
    assert_eq!(TaskOptions::new().retry(levels.clone()).retry_limit, 4);
    let task = TaskBuilder::new("t", 1, TaskOptions::new()).retry(levels.clone()).into_new_task()?;
    assert_eq!(task.max_attempts, 5);
    // A handler default limit of 3 does not cut a per-submit policy short...
    let defaults = TaskOptions::new().retry_limit(3);
    let task = TaskBuilder::new("t", 1, defaults.clone()).retry(levels.clone()).into_new_task()?;
    assert_eq!(task.max_attempts, 5);
    // ...but a limit set with the levels, below their count, is refused.
    for refused in [
        TaskBuilder::new("t", 1, defaults.clone()).retry(levels.clone()).retry_limit(2).into_new_task(),
        TaskBuilder::new("t", 1, defaults.clone()).retry_limit(2).retry(levels.clone()).into_new_task(),
    ] {
        match refused {
            Err(Error::Invalid { what: "retry_limit", reason }) => {
                assert!(reason.contains("never reaches"), "{reason}");
            }
            other => panic!("expected Invalid retry_limit, got {other:?}"),
        }
    }
    assert!(TaskOptions::new().retry_limit(3).retry(levels.clone()).validate().is_err());
    // A larger limit repeats the last level, as documented.
    assert!(TaskOptions::new().retry_limit(9).retry(levels).validate().is_ok());
    Ok(())
}

/// A handler stops its executor: `run_until` returns though its signal
/// never fires, and the attempt that asked finished first.
#[tokio::test]
async fn a_handler_can_stop_its_executor() -> TestResult {
    let ex = builder(MemoryStorage::new())
        .handler(Handler::new("stopper", |_: (), ctx: TaskContext| async move {
            assert!(ctx.stop_executor(), "a running attempt has an executor to stop");
        }))
        .build()
        .await?;
    let id = TaskBuilder::new("stopper", (), TaskOptions::new()).submit(&ex).await?.id;
    let report =
        tokio::time::timeout(Duration::from_secs(20), ex.run_until(std::future::pending::<()>())).await??;
    assert_eq!(report.released, 0, "the asking attempt drained, nothing was cut short");
    assert_eq!(ex.status(&id).await?.map(|t| t.state), Some(TaskState::Completed));
    assert!(!TaskContext::for_test(id, "stopper").stop_executor(), "a test context has nothing to stop");
    Ok(())
}

/// The stop handle starts the shutdown from outside, without tokio-util.
#[tokio::test]
async fn a_stop_handle_starts_the_shutdown() -> TestResult {
    let ex = builder(MemoryStorage::new()).build().await?;
    let running = ex.start();
    let stop = running.stop_handle();
    assert!(!stop.is_stopped());
    stop.stop();
    tokio::time::timeout(Duration::from_secs(5), running.stop_handle().stopped()).await?;
    running.shutdown().await?;
    Ok(())
}

/// A `tracing` writer that keeps what was logged, to read the leader's
/// warning back.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Two processes (here: executors) on one namespace with different
/// handlers: both announce themselves, `workers()` lists both with their
/// names, and the leader warns once, naming what each side lacks. Executors
/// with the same handlers stay quiet.
#[tokio::test(flavor = "current_thread")]
async fn workers_with_different_handler_sets_on_one_namespace_are_reported() -> TestResult {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);
    let store = MemoryStorage::new();
    let noop = |name: &str| Handler::new(name.to_owned(), |_: u32, _ctx: TaskContext| async {});
    let fast = |b: reliable_executor::ExecutorBuilder<MemoryStorage>| {
        b.namespace("two-services")
            .housekeeping_interval(Duration::from_millis(10))
            .counts_interval(Duration::from_millis(30))
    };
    let billing =
        fast(builder(store.clone())).handler(noop("charge")).handler(noop("refund")).build().await?;
    let mailer =
        fast(builder(store.clone())).handler(noop("charge")).handler(noop("send_mail")).build().await?;
    let (a, b) = (billing.start(), mailer.start());
    let mut listed = Vec::new();
    for _ in 0..500 {
        listed = billing.workers().await?;
        let warned = String::from_utf8_lossy(&logs.0.lock().map_err(|_| "poisoned")?)
            .contains("2 different handler sets");
        if listed.len() == 2 && warned {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    a.shutdown().await?;
    b.shutdown().await?;
    let mut names: Vec<Vec<String>> = listed.iter().map(|w| w.names.clone()).collect();
    names.sort();
    assert_eq!(names, [vec!["charge", "refund"], vec!["charge", "send_mail"]], "{listed:?}");
    let text = String::from_utf8_lossy(&logs.0.lock().map_err(|_| "poisoned")?).into_owned();
    assert!(
        text.contains("1 worker(s) without [refund]") && text.contains("1 worker(s) without [send_mail]"),
        "{text}"
    );
    assert_eq!(
        text.matches("different handler sets").count(),
        1,
        "a lasting difference is logged once: {text}"
    );

    // The same handlers on another namespace: listed, no warning.
    let before = text.len();
    let same = |b: reliable_executor::ExecutorBuilder<MemoryStorage>| {
        b.namespace("one-service")
            .housekeeping_interval(Duration::from_millis(10))
            .counts_interval(Duration::from_millis(30))
    };
    let one = same(builder(store.clone())).handler(noop("charge")).build().await?;
    let two = same(builder(store.clone())).handler(noop("charge")).build().await?;
    let (a, b) = (one.start(), two.start());
    for _ in 0..500 {
        if one.workers().await?.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.shutdown().await?;
    b.shutdown().await?;
    assert_eq!(one.workers().await?.len(), 2);
    let after = String::from_utf8_lossy(&logs.0.lock().map_err(|_| "poisoned")?).into_owned();
    assert!(!after[before..].contains("different handler sets"), "{after}");
    Ok(())
}
