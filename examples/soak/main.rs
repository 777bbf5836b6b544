//! A sustained run at the store's full processing rate, with retention on:
//! producers keep a backlog queued, no-op handlers drain it, the leader
//! trims completed tasks older than `--retention-secs`. Every
//! `--sample-secs` it records the tasks stored, the store's memory (Redis
//! `used_memory`, MySQL data + index length, PostgreSQL table size with its
//! indexes and dead row versions) and the processing rate, and at
//! the end writes them as CSV and as a PNG chart: with retention the curves
//! must plateau. `--retention-secs 0` keeps every task (the rate without
//! retention, for comparison).
//!
//! ```sh
//! cargo run --release --example soak -- --url redis://127.0.0.1:6379 --minutes 10 --out docs/soak-redis
//! cargo run --release --example soak -- --url redis://127.0.0.1:6379 --partitions 4 --minutes 10 --out docs/soak-redis-partitioned
//! cargo run --release --example soak -- --url mysql://root@127.0.0.1:3306/test --minutes 10 --out docs/soak-mysql
//! ```

mod plot;

use std::{
    fmt::Write as _,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use clap::Parser;
use executor_any::AnyStorage;
use executor_core::{
    Executor, Handler, Namespace, TaskBuilder, TaskContext, TaskOptions, TaskState, query::Retention,
    storage::Storage,
};
use executor_redis::RedisStorage;
use fred::interfaces::ClientLike;

/// Command line.
#[derive(Clone, Debug, Parser)]
#[command(about = "Sustained processing with retention: stored tasks and store memory over time")]
struct Args {
    /// The store (`redis://…`, `redis-cluster://…`, `mysql://…`, `postgres://…`, `memory:`).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    url: String,
    /// Partitions per namespace, for a Redis URL.
    #[arg(long, default_value_t = 1)]
    partitions: u16,
    /// Length of the run, in minutes (fractions allowed).
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Completed tasks are kept this long; 0 keeps them all (no retention).
    #[arg(long, default_value_t = 30)]
    retention_secs: u64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 5)]
    sample_secs: u64,
    /// Handler slots of the executor.
    #[arg(long, default_value_t = 128)]
    concurrency: usize,
    /// Tasks kept queued ahead of the workers, so they never wait for work.
    #[arg(long, default_value_t = 20_000)]
    backlog: u64,
    /// Where to write `<out>.csv` and `<out>.png` (no files when absent).
    #[arg(long)]
    out: Option<String>,
}

/// One sample.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    /// Seconds since the start.
    pub(crate) t: f64,
    /// Tasks in the store, any state.
    pub(crate) stored: u64,
    /// Completed tasks in the store.
    pub(crate) completed: u64,
    /// Store memory in bytes, if the store reports it.
    pub(crate) memory: Option<u64>,
    /// Tasks processed per second since the previous sample.
    pub(crate) rate: f64,
}

type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

#[tokio::main]
async fn main() -> Res {
    let args = Args::parse();
    let storage = connect(&args).await?;
    let ns = Namespace::new(format!("soak-{}", std::process::id()))?;
    let result = run(&args, storage.clone(), &ns).await;
    storage.purge(&ns).await?;
    let samples = result?;
    report(&args, &samples)?;
    Ok(())
}

async fn connect(args: &Args) -> Res<AnyStorage> {
    if args.partitions > 1 {
        let redis = RedisStorage::builder(&args.url).partitions(args.partitions).connect().await?;
        return Ok(AnyStorage::from(redis));
    }
    Ok(AnyStorage::connect(&args.url).await?)
}

async fn run(args: &Args, storage: AnyStorage, ns: &Namespace) -> Res<Vec<Sample>> {
    let done = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&done);
    let keep = if args.retention_secs == 0 {
        executor_core::time::MAX_DURATION
    } else {
        Duration::from_secs(args.retention_secs)
    };
    let executor = Executor::builder(storage.clone())
        .namespace(ns.as_str())
        .concurrency(args.concurrency)
        .claim_batch(args.concurrency.min(512))
        .retention(Retention::default().completed(keep).dead_letter(Some(keep)))
        .trim_interval(Duration::from_secs(5))
        .handler(Handler::new("soak_noop", move |_: (), _ctx: TaskContext| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }))
        .build()
        .await?;
    let running = executor.start();
    let stop = Arc::new(AtomicBool::new(false));
    let submitted = Arc::new(AtomicU64::new(0));
    let producer = tokio::spawn(produce(
        executor.clone(),
        Arc::clone(&done),
        Arc::clone(&submitted),
        Arc::clone(&stop),
        args.backlog,
    ));

    let start = Instant::now();
    let end = start + Duration::from_secs_f64(args.minutes * 60.0);
    let mut samples = Vec::new();
    let (mut last_t, mut last_done) = (0.0, 0);
    let every = Duration::from_secs(args.sample_secs.max(1));
    println!("{:>7} {:>10} {:>10} {:>12} {:>10}", "t (s)", "stored", "completed", "memory MiB", "tasks/s");
    while Instant::now() < end {
        tokio::time::sleep(every).await;
        let t = start.elapsed().as_secs_f64();
        let n = done.load(Ordering::Relaxed);
        let counts = storage.counts(ns).await?;
        let memory = store_memory(&storage).await;
        let rate = (n - last_done) as f64 / (t - last_t);
        (last_t, last_done) = (t, n);
        let sample =
            Sample { t, stored: counts.total(), completed: counts.get(TaskState::Completed), memory, rate };
        println!(
            "{:>7.0} {:>10} {:>10} {:>12} {:>10.0}",
            sample.t,
            sample.stored,
            sample.completed,
            memory.map_or("-".to_owned(), |m| format!("{:.1}", m as f64 / 1_048_576.0)),
            sample.rate
        );
        samples.push(sample);
    }
    stop.store(true, Ordering::Relaxed);
    producer.await??;
    running.shutdown().await?;
    Ok(samples)
}

/// Keeps `backlog` tasks queued ahead of the workers, in batches of 500.
async fn produce(
    executor: Executor<AnyStorage>,
    done: Arc<AtomicU64>,
    submitted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    backlog: u64,
) -> executor_core::Result<()> {
    while !stop.load(Ordering::Relaxed) {
        if submitted.load(Ordering::Relaxed).saturating_sub(done.load(Ordering::Relaxed)) >= backlog {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        let batch = (0..500).map(|_| TaskBuilder::new("soak_noop", (), TaskOptions::new()).into_new_task());
        let answers = executor.submit_many(batch.collect::<Result<Vec<_>, _>>()?).await;
        let ok = answers.iter().filter(|a| a.is_ok()).count() as u64;
        if let Some(Err(e)) = answers.into_iter().find(Result::is_err) {
            eprintln!("a submit failed: {e}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        submitted.fetch_add(ok, Ordering::Relaxed);
    }
    Ok(())
}

/// Redis `used_memory`; MySQL data + index length of the task table (after
/// `ANALYZE TABLE`, so InnoDB's statistics are current); PostgreSQL's
/// `pg_total_relation_size` of the task table.
async fn store_memory(storage: &AnyStorage) -> Option<u64> {
    match storage {
        AnyStorage::Redis(r) => {
            let info: String = r.pool().next().info(Some(fred::types::InfoKind::Memory)).await.ok()?;
            info.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok())
        }
        AnyStorage::MySql(m) => {
            sqlx::query("ANALYZE TABLE reliable_executor_tasks").execute(m.pool()).await.ok()?;
            let bytes: i64 = sqlx::query_scalar(
                "SELECT CAST(data_length + index_length AS SIGNED) FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_name = 'reliable_executor_tasks'",
            )
            .fetch_one(m.pool())
            .await
            .ok()?;
            u64::try_from(bytes).ok()
        }
        AnyStorage::Postgres(p) => {
            // Heap, TOAST and every index, dead row versions included: the
            // files vacuum must keep from growing.
            let bytes: i64 = sqlx::query_scalar("SELECT pg_total_relation_size('reliable_executor_tasks')")
                .fetch_one(p.pool())
                .await
                .ok()?;
            u64::try_from(bytes).ok()
        }
        _ => None,
    }
}

/// Prints the summary and writes the CSV and the chart.
fn report(args: &Args, samples: &[Sample]) -> Res {
    let mut rates: Vec<f64> = samples.iter().skip(2).map(|s| s.rate).collect();
    rates.sort_by(f64::total_cmp);
    let median = rates.get(rates.len() / 2).copied().unwrap_or(0.0);
    let tail = &samples[samples.len() * 2 / 3..];
    let max_stored = samples.iter().map(|s| s.stored).max().unwrap_or(0);
    let tail_max = tail.iter().map(|s| s.stored).max().unwrap_or(0);
    let label = if args.partitions > 1 {
        format!("{} ({} partitions)", redact(&args.url), args.partitions)
    } else {
        redact(&args.url)
    };
    println!();
    println!("store            : {label}");
    println!(
        "retention        : {}",
        if args.retention_secs == 0 {
            "none".to_owned()
        } else {
            format!("completed {} s", args.retention_secs)
        }
    );
    println!("median rate      : {median:.0} tasks/s over {} samples", rates.len());
    println!("stored, max      : {max_stored} (last third of the run: max {tail_max})");
    if let (Some(first), Some(last)) =
        (samples.first().and_then(|s| s.memory), samples.last().and_then(|s| s.memory))
    {
        let tail_mem = tail.iter().filter_map(|s| s.memory).max().unwrap_or(0);
        println!(
            "memory           : {:.1} MiB at the first sample, {:.1} MiB at the last (last third max {:.1} MiB)",
            mib(first),
            mib(last),
            mib(tail_mem)
        );
    }
    if let Some(out) = &args.out {
        let mut csv = String::from("t_s,stored,completed,memory_bytes,rate_per_s\n");
        for s in samples {
            let _ = writeln!(
                csv,
                "{:.1},{},{},{},{:.1}",
                s.t,
                s.stored,
                s.completed,
                s.memory.map(|m| m.to_string()).unwrap_or_default(),
                s.rate
            );
        }
        std::fs::write(format!("{out}.csv"), csv)?;
        let title =
            format!("{label}, completed retention {} s: median {median:.0} tasks/s", args.retention_secs);
        plot::chart(&format!("{out}.png"), &title, samples)?;
        println!("wrote {out}.csv and {out}.png");
    }
    Ok(())
}

fn mib(b: u64) -> f64 {
    b as f64 / 1_048_576.0
}

/// The URL without a password.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}***{}", &url[..s + 3], &url[at..]),
        _ => url.to_owned(),
    }
}
