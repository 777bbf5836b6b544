//! Timeouts, panics, unknown handlers and bad payloads: each ends in a
//! clear state with a reason, and the runtime carries on (bad input never panics nor loses tasks).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use reliable_executor::{
    Client, Error, Handler, Listener, MemoryStorage, Namespace, Result, RetryPolicy, Submit, TaskBuilder,
    TaskContext, TaskOptions, TaskRecord, TaskState,
};

use crate::support::{builder, finished, submit};

fn sleeper(name: &str, secs: u64) -> Handler {
    Handler::new(name, move |_: (), _ctx: TaskContext| async move {
        tokio::time::sleep(Duration::from_secs(secs)).await;
    })
}

#[tokio::test(start_paused = true)]
async fn past_max_duration_ends_timeout() -> Result<()> {
    let ex = builder(MemoryStorage::new()).handler(sleeper("slow", 3_600)).build().await?;
    let running = ex.start();
    let opts = TaskOptions::new().max_duration(Duration::from_secs(5));
    let id = submit(&ex, "slow", (), opts).await?;
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Timeout);
    assert!(record.last_error.as_deref().unwrap_or("").contains("max_duration"), "{record:?}");
    let took = record.finished_at.unwrap_or_default().since(record.created_at);
    assert!(took >= Duration::from_secs(5) && took < Duration::from_secs(7), "{took:?}");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn attempt_timeout_is_retried_then_failed() -> Result<()> {
    let ex = builder(MemoryStorage::new()).handler(sleeper("hang", 3_600)).build().await?;
    let running = ex.start();
    let opts = TaskOptions::new()
        .timeout(Duration::from_secs(1))
        .retry_limit(2)
        .retry(RetryPolicy::fixed(Duration::from_secs(1)));
    let id = submit(&ex, "hang", (), opts).await?;
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.attempts, 3);
    assert!(record.last_error.as_deref().unwrap_or("").contains("timed out"), "{record:?}");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_panic_is_a_failed_attempt_with_its_message() -> Result<()> {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let handler = Handler::new("panics", move |_: (), _ctx: TaskContext| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        async move {
            assert!(n > 0, "boom on the first attempt");
        }
    });
    let ex = builder(MemoryStorage::new()).handler(handler).build().await?;
    let running = ex.start();
    let id = submit(&ex, "panics", (), TaskOptions::new().retry(RetryPolicy::fixed(Duration::from_secs(1))))
        .await?;
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Completed);
    assert_eq!(record.attempts, 2);
    assert!(record.last_error.as_deref().unwrap_or("").contains("boom on the first attempt"), "{record:?}");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn unknown_name_and_bad_payload_end_error_and_others_still_run() -> Result<()> {
    let storage = MemoryStorage::new();
    let typed = Handler::new("typed", |n: u64, _ctx: TaskContext| async move {
        if n == 0 { Err(TaskError::abort("zero")) } else { Ok(()) }
    });
    use reliable_executor::TaskError;
    // No grace: an unknown name is dead-lettered at its first claim
    // (rolling_deploy.rs covers the grace a rolling deploy gets by default).
    let ex = builder(storage.clone()).handler(typed).unknown_task_grace(Duration::ZERO).build().await?;
    // A producer that skips the name check can enqueue names no worker knows.
    let producer = Client::without_name_check(storage, Namespace::new("runtime-test")?);
    let running = ex.start();
    let unknown = TaskBuilder::new("nobody_handles_this", (), TaskOptions::new()).submit(&producer).await?.id;
    let bad = TaskBuilder::new("typed", "not a number", TaskOptions::new()).submit(&producer).await?.id;
    let good = TaskBuilder::new("typed", 7u64, TaskOptions::new()).submit(&ex).await?.id;

    let r = finished(&ex, &unknown).await?;
    assert_eq!(r.state, TaskState::Error);
    assert!(r.last_error.as_deref().unwrap_or("").contains("no handler registered"), "{r:?}");
    let r = finished(&ex, &bad).await?;
    assert_eq!(r.state, TaskState::Error);
    assert!(r.last_error.as_deref().unwrap_or("").contains("payload does not decode"), "{r:?}");
    assert_eq!(finished(&ex, &good).await?.state, TaskState::Completed);
    // The executor's own client refuses unknown names at submit.
    let refused = TaskBuilder::new("nobody_handles_this", (), TaskOptions::new()).submit(&ex).await;
    assert!(matches!(refused, Err(Error::UnknownTask(_))), "{refused:?}");
    running.shutdown().await?;
    Ok(())
}

#[derive(Debug)]
struct PanickyListener(Arc<AtomicUsize>);

impl Listener for PanickyListener {
    fn on_started(&self, _task: &TaskRecord) {
        panic!("listener bug");
    }
    fn on_completed(&self, _task: &TaskRecord) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_listener_does_not_harm_the_runtime() -> Result<()> {
    let completed = Arc::new(AtomicUsize::new(0));
    let ex = builder(MemoryStorage::new())
        .handler(Handler::new("ok", |_: (), _ctx: TaskContext| async {}))
        .listener(PanickyListener(Arc::clone(&completed)))
        .build()
        .await?;
    let running = ex.start();
    for _ in 0..3 {
        let id = submit(&ex, "ok", (), TaskOptions::new()).await?;
        assert_eq!(finished(&ex, &id).await?.state, TaskState::Completed);
    }
    assert_eq!(completed.load(Ordering::SeqCst), 3);
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn build_refuses_duplicates_missing_handlers_and_bad_settings() {
    let h = || Handler::new("same", |_: (), _ctx: TaskContext| async {});
    let dup = builder(MemoryStorage::new()).handler(h()).handler(h()).build().await;
    assert!(matches!(dup, Err(Error::DuplicateHandler { .. })), "{dup:?}");
    let missing = builder(MemoryStorage::new()).expect_handlers(["send_notify"]).build().await;
    let msg = missing.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("send_notify") && msg.contains("use my_handlers as _"), "{msg}");
    let bad_ns = builder(MemoryStorage::new()).namespace("has space").build().await;
    assert!(matches!(bad_ns, Err(Error::Invalid { what: "namespace", .. })), "{bad_ns:?}");
    let bad_hb = builder(MemoryStorage::new()).heartbeat_interval(Duration::from_secs(60)).build().await;
    assert!(matches!(bad_hb, Err(Error::Invalid { .. })), "{bad_hb:?}");
    let zero = builder(MemoryStorage::new()).concurrency(0).build().await;
    assert!(matches!(zero, Err(Error::Invalid { what: "concurrency", .. })), "{zero:?}");
}

#[tokio::test]
async fn submit_refuses_bad_input_with_clear_errors() -> Result<()> {
    let ex = builder(MemoryStorage::new())
        .handler(Handler::new("any", |_: serde_json::Value, _ctx: TaskContext| async {}))
        .max_payload(1_000)
        .build()
        .await?;
    let big = TaskBuilder::new("any", "x".repeat(2_000), TaskOptions::new()).submit(&ex).await;
    assert!(matches!(big, Err(Error::PayloadTooLarge { size: 2_002, limit: 1_000 })), "{big:?}");
    let bad_id = TaskBuilder::new("any", 1, TaskOptions::new()).id("a b").submit(&ex).await;
    assert!(matches!(bad_id, Err(Error::Invalid { what: "task id", .. })), "{bad_id:?}");
    let custom = RetryPolicy::custom("c", |_| Duration::ZERO);
    let not_storable = TaskBuilder::new("any", 1, TaskOptions::new()).retry(custom).submit(&ex).await;
    assert!(matches!(not_storable, Err(Error::Invalid { what: "retry policy", .. })), "{not_storable:?}");
    let ok = TaskBuilder::new("any", 1, TaskOptions::new()).id("dup").submit(&ex).await?.id;
    let dup = TaskBuilder::new("any", 1, TaskOptions::new()).id("dup").submit(&ex).await;
    assert!(matches!(dup, Err(Error::DuplicateId(_))), "{dup:?}");
    let again = TaskBuilder::new("any", 2, TaskOptions::new()).id("dup").idempotent().submit(&ex).await?.id;
    assert_eq!(again, ok);
    let _ = ex.submit_new(TaskBuilder::new("any", 3, TaskOptions::new()).into_new_task()?).await?;
    Ok(())
}
