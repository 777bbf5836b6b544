//! Redis unreachable in the middle of a run (a private redis-server with
//! `appendonly yes`, stopped and started again): submits fail with a clear
//! error while it is down, nothing is lost, and claiming resumes within a
//! second or so of Redis returning. The outage lasts `CHAOS_OUTAGE_SECS`
//! (default 5; the 30 s: `CHAOS_OUTAGE_SECS=30`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use executor_chaos::{
    process::Signal,
    server::{Backend, PrivateServer},
    store::ChaosStore,
};
use executor_core::{Error, Executor, Handler, TaskBuilder, TaskContext, TaskError, TaskOptions, TaskState};
use executor_redis::RedisStorage;

use crate::common::{self, TestResult};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_mid_run() -> TestResult {
    let _one = crate::common::one_at_a_time_async().await;
    let outage = Duration::from_secs(
        std::env::var("CHAOS_OUTAGE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5),
    );
    let mut server = PrivateServer::start(Backend::Redis)?;
    let storage = RedisStorage::connect_retrying(&server.url(), Duration::from_secs(10)).await?;
    let starts: Arc<Mutex<HashMap<String, Vec<Instant>>>> = Arc::default();
    let seen = Arc::clone(&starts);
    let handler = Handler::new("outage_step", move |_i: u64, ctx: TaskContext| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock()
                .map_err(|_| TaskError::retry("poisoned"))?
                .entry(ctx.id().to_string())
                .or_default()
                .push(Instant::now());
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<(), TaskError>(())
        }
    });
    let executor = Executor::builder(storage)
        .namespace(common::unique_ns("outage"))
        .concurrency(4)
        .lease(Duration::from_secs(2))
        .heartbeat_interval(Duration::from_millis(500))
        .housekeeping_interval(Duration::from_millis(250))
        .max_idle_wait(Duration::from_secs(1))
        .handler(handler)
        .build()
        .await?;
    let mut ids = Vec::new();
    for i in 0..400u64 {
        ids.push(
            TaskBuilder::new("outage_step", i, TaskOptions::new().retry_limit(100))
                .submit(&executor)
                .await?
                .id,
        );
    }
    let running = executor.start();
    let before = common::wait_for(Duration::from_secs(20), || {
        let n = starts.lock().ok()?.len();
        (n >= 50).then_some(n)
    });
    assert!(before.is_some(), "tasks did not start before the outage");

    server.down(Signal::Term);
    let down_at = Instant::now();
    let t0 = Instant::now();
    let refused = TaskBuilder::new("outage_step", 9_999u64, TaskOptions::new()).submit(&executor).await;
    let took = t0.elapsed();
    match &refused {
        Err(e @ Error::Storage { retryable: true, .. }) => {
            println!("submit while down failed in {took:?}: {e}")
        }
        // The connection was open when the server went: the command was
        // written to it, so whether it ran cannot be known (the server may
        // have read it before it stopped). Either answer says "try again".
        Err(e @ Error::OutcomeUnknown { .. }) => {
            println!("submit while down lost its answer in {took:?}: {e}")
        }
        other => panic!(
            "a submit while Redis is down must fail with a retryable storage error or an unknown \
             outcome, got {other:?}"
        ),
    }
    assert!(took < Duration::from_secs(6), "the failing submit took {took:?}");
    tokio::time::sleep(outage.saturating_sub(down_at.elapsed())).await;

    let done_before: usize = starts.lock().map(|m| m.len()).unwrap_or(0);
    server.up()?;
    let up_at = Instant::now();
    let resumed = common::wait_for(Duration::from_secs(10), || {
        let m = starts.lock().ok()?;
        m.values().flatten().filter(|t| **t >= up_at).min().copied()
    })
    .ok_or("claiming did not resume within 10 s of Redis returning")?;
    let resume = resumed.duration_since(up_at);
    println!(
        "outage {outage:?}; {done_before} tasks had started; claiming resumed {resume:?} after Redis answered"
    );
    assert!(resume <= Duration::from_secs(3), "claiming resumed only after {resume:?}");

    for id in &ids {
        let rec = executor.wait_for(id, Duration::from_secs(60)).await?;
        assert_eq!(rec.state, TaskState::Completed, "{rec:?}");
    }
    let counts = executor.counts().await?;
    println!("counts after the outage: {counts:?}");
    assert_eq!(counts.get(TaskState::Completed), ids.len() as u64);
    running.shutdown().await?;
    Ok(())
}
