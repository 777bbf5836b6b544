//! A queue limited to N running tasks, served by three executor processes
//! with free slots to spare: how much of the limit's ideal throughput
//! (N / handler time) they reach, and how soon a freed slot is taken again
//! (from a handler's end to the next start, matched in order).
//!
//! The parent pre-loads the tasks and starts three children of this binary
//! (`--limited-child`); each runs an executor of concurrency 16 with the
//! default idle wait, records the wall-clock span of every handler run and
//! prints them when the namespace has no task left waiting or running.

use std::{
    process::{Command, Stdio},
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use executor_core::{
    Executor, Handler, MemoryStorage, Namespace, QueueName, TaskContext, TaskOptions, TaskState,
    queue::QueueLimits, storage::Due,
};

use crate::{
    Args, Store,
    backend::Backend,
    phases::{namespace, noop},
    stats,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const QUEUE: &str = "limited";
const PROCESSES: usize = 3;

fn micros_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Parent side.
pub(crate) async fn run<S: Backend>(storage: &S, args: &Args) -> Res<()> {
    if args.storage == Store::Memory {
        println!("limited   skipped: the memory store cannot be shared with child processes");
        return Ok(());
    }
    let ns = namespace("limited")?;
    let queue = QueueName::new(QUEUE)?;
    storage.set_queue_limits(&ns, &queue, &QueueLimits::new().concurrency(args.limited_n)).await?;
    let n = args.limited_tasks;
    let mut batch = Vec::with_capacity(args.batch_size);
    for i in 0..n {
        let mut t = noop("limited", b"null".to_vec(), Due::Now);
        t.queue = queue.clone();
        batch.push(t);
        if batch.len() == args.batch_size || i + 1 == n {
            for r in storage.submit_many(&ns, std::mem::take(&mut batch)).await? {
                r?;
            }
        }
    }
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(std::env::current_exe()?)
                .args(["--storage", store_flag(args.storage), "--redis-url", &args.redis_url])
                .args(["--mysql-url", &args.mysql_url, "--postgres-url", &args.postgres_url])
                .args(["--limited-child", ns.as_str()])
                .args(["--limited-ms", &args.limited_ms.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut spans: Vec<(i64, i64)> = Vec::with_capacity(n);
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await??;
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines().filter_map(|l| l.strip_prefix("SPAN ")) {
            let mut it = line.split_whitespace().filter_map(|v| v.parse::<i64>().ok());
            if let (Some(a), Some(b)) = (it.next(), it.next()) {
                spans.push((a, b));
            }
        }
        if std::env::var_os("LIMITED_GAPS").is_some() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
        }
        if !out.status.success() {
            return Err(format!("a limited child failed: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
    }
    storage.drop_namespace(&ns).await;
    if spans.len() != n {
        return Err(format!("limited: {} of {n} handler runs reported", spans.len()).into());
    }
    let limit = usize::try_from(args.limited_n)?;
    let most = executor_core::testing::max_overlap(&spans);
    let first = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let last = spans.iter().map(|s| s.1).max().unwrap_or(0);
    let rate = n as f64 / ((last - first) as f64 / 1e6);
    // The ideal by the handlers' own measured time: a timer of 20 ms
    // sleeps a little longer, and no store can make up for that.
    let mean_span = spans.iter().map(|s| (s.1 - s.0) as f64).sum::<f64>() / n as f64 / 1e6;
    let ideal = f64::from(args.limited_n) / mean_span;
    // The k-th start after the first N took the slot the (k-N)-th end freed.
    let mut starts: Vec<i64> = spans.iter().map(|s| s.0).collect();
    let mut ends: Vec<i64> = spans.iter().map(|s| s.1).collect();
    starts.sort_unstable();
    ends.sort_unstable();
    let gaps: Vec<f64> = starts
        .iter()
        .skip(limit)
        .zip(&ends)
        .map(|(start, end)| (start - end).max(0) as f64 / 1000.0)
        .collect();
    let mut sorted = gaps.clone();
    sorted.sort_by(f64::total_cmp);
    if std::env::var_os("LIMITED_GAPS").is_some() {
        let q = |x: f64| stats::quantile(&sorted, x);
        eprintln!(
            "gaps ms: p25 {:.2} p50 {:.2} p75 {:.2} p90 {:.2} p95 {:.2} p99 {:.2} max {:.2} mean {:.2}",
            q(0.25),
            q(0.5),
            q(0.75),
            q(0.9),
            q(0.95),
            q(0.99),
            q(1.0),
            gaps.iter().sum::<f64>() / gaps.len().max(1) as f64
        );
    }
    let (_, p50, p99, _) = stats::summary(gaps);
    println!(
        "limited   {PROCESSES} processes x concurrency 16, limit {limit}, {n} tasks of {} ms (measured {:.2} ms): {rate:.0} tasks/s = {:.0} % of the ideal {ideal:.0}/s; freed slot to next start p50 {p50:.2} ms, p99 {p99:.2} ms; most running at once {most}",
        args.limited_ms,
        mean_span * 1000.0,
        rate * 100.0 / ideal
    );
    if most > limit {
        return Err(format!("the limit of {limit} was exceeded: {most} ran at once").into());
    }
    Ok(())
}

fn store_flag(store: Store) -> &'static str {
    match store {
        Store::Mysql => "mysql",
        Store::Postgres => "postgres",
        _ => "redis",
    }
}

/// Child side.
pub(crate) async fn child(args: &Args, ns: &str) -> Res<()> {
    let ns = Namespace::new(ns)?;
    match args.storage {
        Store::Redis | Store::AnyRedis => serve(args.redis().await?, &ns, args).await,
        Store::Memory => serve(MemoryStorage::new(), &ns, args).await,
        Store::Mysql => serve(executor_mysql::MySqlStorage::connect(&args.mysql_url).await?, &ns, args).await,
        Store::Postgres => {
            serve(executor_postgres::PostgresStorage::connect(&args.postgres_url).await?, &ns, args).await
        }
    }
}

async fn serve<S: executor_core::storage::ExecutorStorage + Clone>(
    storage: S,
    ns: &Namespace,
    args: &Args,
) -> Res<()> {
    let spans: Arc<Mutex<Vec<(i64, i64)>>> = Arc::default();
    let work = Duration::from_millis(args.limited_ms);
    let handler = {
        let spans = Arc::clone(&spans);
        Handler::new("limited", move |_: (), _ctx: TaskContext| {
            let spans = Arc::clone(&spans);
            async move {
                let start = micros_now();
                tokio::time::sleep(work).await;
                spans.lock().unwrap_or_else(PoisonError::into_inner).push((start, micros_now()));
            }
        })
        .options(TaskOptions::new().queue(QueueName::new(QUEUE)?))
    };
    let executor = Executor::builder(storage.clone())
        .namespace(ns.as_str())
        .concurrency(16)
        .queues([(QUEUE, 1)])
        .handler(handler)
        .build()
        .await?;
    let running = executor.start();
    let give_up = Instant::now() + Duration::from_secs(600);
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let c = storage.counts(ns).await?;
        let left: u64 =
            [TaskState::Created, TaskState::Pending, TaskState::Running].iter().map(|s| c.get(*s)).sum();
        if left == 0 || Instant::now() > give_up {
            break;
        }
    }
    running.shutdown().await?;
    for (a, b) in spans.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        println!("SPAN {a} {b}");
    }
    Ok(())
}
