//! Benchmarks of the executor on one machine: submit rates, processing rates
//! at several concurrencies, pickup latency, lateness of a burst due at one
//! instant, a large backlog, Redis memory per queued task and the executor's
//! peak RSS, printed beside `redis-benchmark` figures from the same run.
//!
//! ```sh
//! cargo run --release --example bench -- --storage redis
//! cargo run --release --example bench -- --storage memory --big-backlog 100000
//! cargo run --release --example bench -- --storage redis --plot docs   # and the charts
//! cargo run --release --example bench -- --storage postgres --plot docs
//! ```
//!
//! Results and the exact commands behind them: `docs/redis.md`, Benchmarks.

mod backend;
mod limited;
mod phases;
mod plot;
mod stats;
mod worker;

use std::time::Duration;

use clap::{Parser, ValueEnum};
use executor_core::MemoryStorage;
use executor_redis::RedisStorage;

/// Which store to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Store {
    Redis,
    Memory,
    Mysql,
    /// PostgreSQL (executor-postgres).
    Postgres,
    /// Redis behind `AnyStorage` (executor-any): what the type erasure costs.
    AnyRedis,
}

/// A part of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Phase {
    Ceiling,
    Submit,
    /// One submit at a time beside a raw round trip of the store.
    Lone,
    Process,
    Latency,
    Lateness,
    Backlog,
    Rss,
    /// A queue limited to `--limited-n` running tasks across three executor
    /// processes: throughput against the ideal, freed slot to next start.
    Limited,
}

/// Command line.
#[derive(Clone, Debug, Parser)]
#[command(about = "Benchmarks of the reliable executor")]
struct Args {
    /// The store.
    #[arg(long, value_enum, default_value = "redis")]
    storage: Store,
    /// Redis URL.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// MySQL URL.
    #[arg(long, env = "MYSQL_URL", default_value = "mysql://root@127.0.0.1:3306/test")]
    mysql_url: String,
    /// PostgreSQL URL.
    #[arg(long, env = "POSTGRES_URL", default_value = "postgres://postgres@127.0.0.1:5432/test")]
    postgres_url: String,
    /// Phases to run (default all).
    #[arg(long, value_enum, value_delimiter = ',')]
    phases: Vec<Phase>,
    /// Single submits, by `--submitters` concurrent producers.
    #[arg(long, default_value_t = 20_000)]
    single_submits: usize,
    /// Concurrent producers for single submits (redis-benchmark uses 50 clients).
    #[arg(long, default_value_t = 50)]
    submitters: usize,
    /// Submits of the one-at-a-time phase (each followed by a raw call).
    #[arg(long, default_value_t = 5_000)]
    lone_submits: usize,
    /// Tasks submitted with `submit_many`.
    #[arg(long, default_value_t = 100_000)]
    batched_submits: usize,
    /// Tasks per `submit_many` call.
    #[arg(long, default_value_t = 500)]
    batch_size: usize,
    /// Pre-loaded no-op tasks per processing run.
    #[arg(long, default_value_t = 100_000)]
    backlog: usize,
    /// Pre-loaded tasks for the concurrency-1 run (it is slow by nature).
    #[arg(long, default_value_t = 10_000)]
    backlog_c1: usize,
    /// Concurrencies of the processing runs.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64,256")]
    concurrency: Vec<usize>,
    /// Submit rate of the latency run, tasks per second.
    #[arg(long, default_value_t = 500)]
    rate: u64,
    /// Length of the latency run, seconds.
    #[arg(long, default_value_t = 5)]
    latency_secs: u64,
    /// Tasks due at the same instant.
    #[arg(long, default_value_t = 2_000)]
    simultaneous: usize,
    /// Executor concurrency of the lateness run.
    #[arg(long, default_value_t = 256)]
    lateness_concurrency: usize,
    /// The large backlog.
    #[arg(long, default_value_t = 1_000_000)]
    big_backlog: usize,
    /// The small backlog it is compared with.
    #[arg(long, default_value_t = 10_000)]
    small_backlog: usize,
    /// Tasks processed (and timed) out of the large backlog.
    #[arg(long, default_value_t = 100_000)]
    big_sample: usize,
    /// Claim batch of every executor (default: the runtime's, 64).
    #[arg(long)]
    claim_batch: Option<usize>,
    /// Spread the tasks over this many queues (q0, q1, ..) served with
    /// weights N, N-1, .., 1; 0 (default) is the plain default queue.
    #[arg(long, default_value_t = 0)]
    queues: usize,
    /// A fleet-wide concurrency limit on each of those queues.
    #[arg(long)]
    limit_concurrency: Option<u32>,
    /// A fleet-wide rate limit on each of those queues, starts per second
    /// (bucket of the same size).
    #[arg(long)]
    limit_rate: Option<u32>,
    /// Sizes of the backlog measured between the small and the large one
    /// (the backlog phase's chart).
    #[arg(long, value_delimiter = ',', default_value = "100000")]
    backlog_steps: Vec<usize>,
    /// Also draw what the phases measured into PNG charts in this directory
    /// (`bench-<store>-processing.png`, `-latency.png`, `-backlog.png`).
    #[arg(long)]
    plot: Option<std::path::PathBuf>,
    /// Run the Redis storage's Lua as plain scripts (`EVALSHA`, its shared
    /// definitions run at every call) instead of the function library.
    #[arg(long)]
    redis_scripts: bool,
    /// The concurrency limit of the limited phase.
    #[arg(long, default_value_t = 5)]
    limited_n: u32,
    /// Handler time of the limited phase, milliseconds.
    #[arg(long, default_value_t = 20)]
    limited_ms: u64,
    /// Tasks of the limited phase.
    #[arg(long, default_value_t = 1_000)]
    limited_tasks: usize,
    /// Internal: run as a child of the limited phase in this namespace.
    #[arg(long, hide = true)]
    limited_child: Option<String>,
    /// Internal: run as the worker child of the RSS phase.
    #[arg(long, hide = true)]
    worker_ns: Option<String>,
    /// Internal: tasks the worker child waits for.
    #[arg(long, hide = true, default_value_t = 0)]
    worker_count: usize,
    /// Internal: the worker child's concurrency.
    #[arg(long, hide = true, default_value_t = 64)]
    worker_concurrency: usize,
}

impl Args {
    /// The Redis storage every phase and the worker child use.
    async fn redis(&self) -> executor_core::Result<RedisStorage> {
        RedisStorage::builder(&self.redis_url).pool_size(4).functions(!self.redis_scripts).connect().await
    }

    fn runs(&self, phase: Phase) -> bool {
        self.phases.is_empty() || self.phases.contains(&phase)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if let Some(n) = args.claim_batch {
        let _ = phases::CLAIM_BATCH.set(n);
    }
    if args.queues > 64
        || (args.queues == 0 && (args.limit_concurrency.is_some() || args.limit_rate.is_some()))
    {
        return Err("--queues is 1..=64 with limits (they apply to the queues it makes), 0 without".into());
    }
    let _ = phases::FLOW.set(phases::Flow {
        queues: args.queues,
        concurrency: args.limit_concurrency,
        rate: args.limit_rate,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        if let Some(ns) = args.worker_ns.clone() {
            return worker::run(&args, &ns).await;
        }
        if let Some(ns) = args.limited_child.clone() {
            return limited::child(&args, &ns).await;
        }
        match args.storage {
            Store::Redis => {
                let storage = args.redis().await?;
                phases::run_all(storage, &args).await
            }
            Store::Memory => phases::run_all(MemoryStorage::new(), &args).await,
            Store::Mysql => {
                let storage = executor_mysql::MySqlStorage::connect(&args.mysql_url).await?;
                phases::run_all(storage, &args).await
            }
            Store::Postgres => {
                let storage = executor_postgres::PostgresStorage::connect(&args.postgres_url).await?;
                let out = phases::run_all(storage.clone(), &args).await;
                storage.close().await;
                out
            }
            Store::AnyRedis => {
                let storage = args.redis().await?;
                phases::run_all(executor_any::AnyStorage::from(storage), &args).await
            }
        }
    })?;
    // Give background connections a moment to close before the runtime ends.
    std::thread::sleep(Duration::from_millis(50));
    Ok(())
}
