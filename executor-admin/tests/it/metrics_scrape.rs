//! Scrapes `/metrics` after a real run and checks each counter against
//! what happened. The recorder is global per process and counts every
//! executor of this test binary, so the handlers here have names no other
//! test uses (`metrics.*`) and only their series are checked.

use std::{sync::Arc, time::Duration};

use axum::http::StatusCode;
use executor_core::{
    Executor, Handler, MemoryStorage, RetryPolicy, TaskBuilder, TaskError, TaskOptions, TaskState,
    metrics as m,
};

use crate::support::{BoxResult, call};

/// Completes.
const ECHO: &str = "metrics.echo";
/// Always fails, without retries.
const CRM: &str = "metrics.sync_crm";
/// Fails twice, then succeeds.
const FLAKY: &str = "metrics.flaky";

/// The value of the sample `name{labels}` in a Prometheus text scrape;
/// `labels` is the exact label set as rendered (sorted as registered).
fn sample(scrape: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
        if metric != name {
            return None;
        }
        let body = rest.strip_suffix('}')?;
        let mut have: Vec<&str> = if body.is_empty() { Vec::new() } else { body.split(',').collect() };
        let mut want: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        have.sort_unstable();
        want.sort_unstable();
        (have == want).then(|| value.parse().ok()).flatten()
    })
}

#[tokio::test]
async fn counters_match_what_happened() -> BoxResult {
    let handle = reliable_executor_admin::install_prometheus()?;
    let app = reliable_executor_admin::metrics_router(handle);

    // `ECHO` completes; `CRM` always fails without retries; `FLAKY` fails
    // twice then succeeds (two retries).
    let flaky_calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let calls = Arc::clone(&flaky_calls);
    let exec = Executor::builder(MemoryStorage::new())
        .namespace("metrics")
        .concurrency(4)
        .handler(Handler::new(ECHO, |_: serde_json::Value, _ctx| async {}))
        .handler(
            Handler::new(CRM, |customer: u64, _ctx| async move {
                Err::<(), _>(TaskError::abort(format!("CRM rejected customer {customer}")))
            })
            .options(TaskOptions::new().retry_limit(0)),
        )
        .build()
        .await?;
    let flaky = Executor::builder(MemoryStorage::new())
        .namespace("metrics-flaky")
        .handler(
            Handler::new(FLAKY, move |_: (), _ctx| {
                let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move { if n < 2 { Err(TaskError::retry("not yet")) } else { Ok(()) } }
            })
            .options(TaskOptions::new().retry_limit(3).retry(RetryPolicy::fixed(Duration::from_millis(10)))),
        )
        .build()
        .await?;
    let (r1, r2) = (exec.start(), flaky.start());
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(TaskBuilder::new(ECHO, n, TaskOptions::new()).submit(&exec).await?.id);
    }
    for n in 0..2 {
        ids.push(TaskBuilder::new(CRM, n, TaskOptions::new()).submit(&exec).await?.id);
    }
    let dup = TaskBuilder::new(ECHO, 9, TaskOptions::new()).id("same").idempotent();
    dup.submit(&exec).await?;
    TaskBuilder::new(ECHO, 9, TaskOptions::new()).id("same").idempotent().submit(&exec).await?;
    let flaky_id = TaskBuilder::new(FLAKY, (), TaskOptions::new()).submit(&flaky).await?.id;
    for id in ids.iter().chain([&executor_core::TaskId::new("same")?]) {
        exec.wait_for(id, Duration::from_secs(5)).await?;
    }
    assert_eq!(flaky.wait_for(&flaky_id, Duration::from_secs(5)).await?.state, TaskState::Completed);
    r1.shutdown().await?;
    r2.shutdown().await?;

    let (status, ctype, scrape) = call(&app, "GET", "/metrics", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    let get = |name: &str, labels: &[(&str, &str)]| sample(&scrape, name, labels).unwrap_or(-1.0);
    let expect = [
        (m::SUBMITTED, vec![("task", ECHO), ("outcome", "created")], 4.0),
        (m::SUBMITTED, vec![("task", ECHO), ("outcome", "existing")], 1.0),
        (m::SUBMITTED, vec![("task", CRM), ("outcome", "created")], 2.0),
        (m::STARTED, vec![("task", ECHO)], 4.0),
        (m::COMPLETED, vec![("task", ECHO)], 4.0),
        (m::STARTED, vec![("task", CRM)], 2.0),
        (m::FAILED, vec![("task", CRM)], 2.0),
        (m::DEAD_LETTERED, vec![("task", CRM), ("state", "FAILED")], 2.0),
        (m::STARTED, vec![("task", FLAKY)], 3.0),
        (m::FAILED, vec![("task", FLAKY)], 2.0),
        (m::RETRIED, vec![("task", FLAKY)], 2.0),
        (m::COMPLETED, vec![("task", FLAKY)], 1.0),
        ("reliable_executor_execution_seconds_count", vec![("task", ECHO)], 4.0),
        (m::IN_FLIGHT, vec![("namespace", "metrics")], 0.0),
    ];
    for (name, labels, want) in expect {
        assert_eq!(get(name, &labels), want, "{name}{labels:?} in:\n{scrape}");
    }
    assert_eq!(get(m::RETRIED, &[("task", CRM)]), -1.0, "{CRM} has no retries");
    assert_eq!(get(m::COMPLETED, &[("task", CRM)]), -1.0);
    // Help texts and the latency buckets (1 ms .. 10 min).
    assert!(scrape.contains(&format!("# HELP {} Tasks submitted", m::SUBMITTED)), "{scrape}");
    let bucket = format!("{}_bucket", m::EXECUTION_SECONDS);
    for le in ["0.001", "0.25", "60", "600", "+Inf"] {
        assert!(get(&bucket, &[("task", ECHO), ("le", le)]) >= 0.0, "no bucket le={le}:\n{scrape}");
    }
    assert_eq!(get(&bucket, &[("task", ECHO), ("le", "+Inf")]), 4.0);
    Ok(())
}
