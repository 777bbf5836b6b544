//! Fleet-wide queue limits through the runtime, measured from
//! the handlers' own start and end times across three executors sharing
//! one store, on tokio's paused clock: a concurrency limit is never
//! exceeded and is reached; a crashed worker's slot comes back after its
//! lease; a rate limit gives its rate over 60 s with no burst above the
//! bucket; a limited queue never holds up an unlimited one.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use reliable_executor::{
    Handler, MemoryStorage, QueueName, Result, RunningExecutor, TaskBuilder, TaskContext, TaskOptions,
    TaskState, WorkerId,
    queue::{ClaimPlan, QueueLimits, RateLimit},
    storage::Storage,
};
use tokio::time::Instant;

use crate::support::{builder, unexpected};

type Spans = Arc<Mutex<Vec<(Instant, Instant)>>>;

/// A handler that works `millis` of (paused) time and records its span.
fn worker(name: &str, queue: &str, millis: u64, spans: &Spans) -> Handler {
    let spans = Arc::clone(spans);
    let queue = QueueName::new(queue).unwrap_or_default();
    Handler::new(name, move |_: u32, _ctx: TaskContext| {
        let spans = Arc::clone(&spans);
        async move {
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(millis)).await;
            spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((start, Instant::now()));
        }
    })
    .options(TaskOptions::new().queue(queue))
}

fn spans(s: &Spans) -> Vec<(Instant, Instant)> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

async fn until_done(spans: &Spans, n: usize, limit: Duration) -> Result<()> {
    let end = Instant::now() + limit;
    while spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len() < n {
        if Instant::now() > end {
            return Err(unexpected(format!(
                "only {} of {n} tasks ran within {limit:?}",
                spans.lock().map(|s| s.len()).unwrap_or(0)
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn three(store: &MemoryStorage, handlers: impl Fn() -> Vec<Handler>) -> Result<Vec<RunningExecutor>> {
    let mut out = Vec::new();
    for _ in 0..3 {
        let mut b = builder(store.clone()).concurrency(8);
        for h in handlers() {
            b = b.handler(h);
        }
        out.push(b.build().await?.start());
    }
    Ok(out)
}

#[tokio::test(start_paused = true)]
async fn a_concurrency_limit_holds_across_three_executors_and_is_reached() -> Result<()> {
    let store = MemoryStorage::new();
    let (reports, fast) = (Spans::default(), Spans::default());
    let submitter = builder(store.clone())
        .handler(worker("report", "reports", 1_000, &reports))
        .handler(worker("ping", "pings", 10, &fast))
        .build()
        .await?;
    let client = submitter.client().clone();
    client.set_queue_limits("reports", QueueLimits::new().concurrency(3)).await?;
    let running = three(&store, || {
        vec![worker("report", "reports", 1_000, &reports), worker("ping", "pings", 10, &fast)]
    })
    .await?;
    let reports_q = TaskOptions::new().queue(QueueName::new("reports")?);
    let pings_q = TaskOptions::new().queue(QueueName::new("pings")?);
    for i in 0..30u32 {
        TaskBuilder::new("report", i, reports_q.clone()).submit(&client).await?;
    }
    let t0 = Instant::now();
    for i in 0..200u32 {
        TaskBuilder::new("ping", i, pings_q.clone()).submit(&client).await?;
    }
    until_done(&fast, 200, Duration::from_secs(60)).await?;
    let pings_took = t0.elapsed();
    until_done(&reports, 30, Duration::from_secs(120)).await?;
    for r in running {
        r.shutdown().await?;
    }
    let all = spans(&reports);
    assert_eq!(
        reliable_executor::testing::max_overlap(&all),
        3,
        "at most 3 reports at once across 3 executors, and 3 reached"
    );
    // 30 one-second reports, 3 at a time: about 10 s, not 30 (the limit is
    // used) and not 2 (it holds).
    let first = all.iter().map(|s| s.0).min().unwrap_or(t0);
    let last = all.iter().map(|s| s.1).max().unwrap_or(t0);
    assert!(
        last - first >= Duration::from_secs(10) && last - first < Duration::from_secs(13),
        "{:?}",
        last - first
    );
    // The unlimited queue did not wait for the limited one.
    assert!(pings_took < Duration::from_secs(3), "200 pings took {pings_took:?} beside the limited queue");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_crashed_workers_slot_comes_back_after_its_lease() -> Result<()> {
    let store = MemoryStorage::new();
    let done = Spans::default();
    let ex = builder(store.clone()).handler(worker("job", "solo", 100, &done)).build().await?;
    let client = ex.client().clone();
    client.set_queue_limits("solo", QueueLimits::new().concurrency(1)).await?;
    let solo = TaskOptions::new().queue(QueueName::new("solo")?);
    for i in 0..3u32 {
        TaskBuilder::new("job", i, solo.clone()).submit(&client).await?;
    }
    // A worker claims one and dies: no heartbeat, no finish.
    let dead = WorkerId::generate();
    let lease = Duration::from_secs(2);
    let crashed_at = Instant::now();
    let held =
        store.claim(ex.namespace(), &dead, &ClaimPlan::single(QueueName::new("solo")?, 1), lease).await?;
    assert_eq!(held.len(), 1);
    let running = ex.start();
    until_done(&done, 3, Duration::from_secs(60)).await?;
    running.shutdown().await?;
    let first_start = spans(&done).iter().map(|s| s.0).min().unwrap_or(crashed_at);
    assert!(
        first_start - crashed_at >= lease,
        "a task of the limited queue started {:?} after the crash, inside the dead worker's lease",
        first_start - crashed_at
    );
    assert!(first_start - crashed_at < lease + Duration::from_secs(2), "the slot came back late");
    assert_eq!(
        client.status(&held[0].id).await?.map(|r| r.state),
        Some(TaskState::Completed),
        "the reaped task ran too"
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_gives_its_rate_over_a_minute_with_no_burst_above_the_bucket() -> Result<()> {
    let store = MemoryStorage::new();
    let starts = Spans::default();
    let submitter = builder(store.clone()).handler(worker("pay", "payments", 1, &starts)).build().await?;
    let client = submitter.client().clone();
    let rate = RateLimit::per_second(20)?.burst(10)?;
    client.set_queue_limits("payments", QueueLimits::new().rate(rate)).await?;
    let pay = TaskOptions::new().queue(QueueName::new("payments")?);
    let tasks = (0..1_400u32)
        .map(|i| TaskBuilder::new("pay", i, pay.clone()).into_new_task())
        .collect::<Result<Vec<_>>>()?;
    for r in client.submit_many(tasks).await {
        r?;
    }
    let running = three(&store, || vec![worker("pay", "payments", 1, &starts)]).await?;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(62)).await;
    for r in running {
        r.shutdown().await?;
    }
    let mut at: Vec<Duration> = spans(&starts).iter().map(|s| s.0 - t0).collect();
    at.sort();
    // Over [1 s, 61 s): 20 a second, ±5 %.
    let in_minute =
        at.iter().filter(|d| **d >= Duration::from_secs(1) && **d < Duration::from_secs(61)).count();
    assert!((1_140..=1_260).contains(&in_minute), "{in_minute} starts in 60 s at 20/s");
    // No window holds more than the bucket plus what it earns meanwhile.
    for (i, a) in at.iter().enumerate() {
        let window = Duration::from_millis(500);
        let n = at[i..].iter().take_while(|b| **b - *a < window).count();
        assert!(n <= 10 + 10 + 1, "{n} starts within {window:?} from {a:?}: above bucket 10 + 10 earned");
    }
    Ok(())
}

/// Three executors of concurrency 16 with a 60 s idle wait, on real time,
/// serve a queue limited to 5: each freed slot is used at once, so 100
/// tasks of 50 ms take about a second, not a minute per missed wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_limited_queue_uses_each_freed_slot_at_once() {
    let store = MemoryStorage::new();
    let ns = reliable_executor::testing::unique_namespace("mem-release");
    reliable_executor::testing::limited_queue_uses_freed_slots(
        vec![store.clone(), store.clone(), store],
        &ns,
    )
    .await;
}
