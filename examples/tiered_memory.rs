//! Measures the Redis memory a tiered store saves: submits N far-future
//! tasks (default 1,000,000) to `RedisStorage` alone and reads `INFO memory`
//! `used_memory` before and after; then submits the same tasks through
//! `TieredStorage<RedisStorage, MySqlStorage>`, which routes them to MySQL,
//! and reads Redis memory again. Prints bytes per task and the saving, and
//! purges both namespaces afterwards.
//!
//! Point it at a Redis nobody else uses, or other clients' writes land in
//! the figure:
//!
//! ```sh
//! redis-server --port 6390 --save '' --appendonly no --daemonize yes
//! cargo run --release --example tiered_memory -- --redis-url redis://127.0.0.1:6390
//! cargo run --release --example tiered_memory -- --tasks 100000   # a shorter run
//! ```

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use clap::Parser;
use executor_core::{
    Namespace, TaskId, TieredStorage,
    storage::{Due, NewTask, Storage},
};
use executor_mysql::MySqlStorage;
use executor_redis::RedisStorage;
use fred::interfaces::ClientLike;

#[derive(Debug, Parser)]
#[command(about = "Redis memory saved per far-future task by TieredStorage")]
struct Args {
    /// Far-future tasks per phase.
    #[arg(long, default_value_t = 1_000_000)]
    tasks: usize,
    /// Payload bytes per task.
    #[arg(long, default_value_t = 64)]
    payload: usize,
    /// Tasks per submit_many call.
    #[arg(long, default_value_t = 500)]
    batch: usize,
    /// Concurrent submit_many calls.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    #[arg(long, env = "MYSQL_URL", default_value = "mysql://root@127.0.0.1:3306/test")]
    mysql_url: String,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

async fn used_memory(redis: &RedisStorage) -> Result<u64, Error> {
    let info: String = redis.pool().next().info(Some(fred::types::InfoKind::Memory)).await?;
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "INFO memory has no used_memory".into())
}

/// Submits `n` tasks due in 30 days with ids `<prefix>-<i>`, `concurrency`
/// batches in flight.
async fn submit_far<S: Storage>(storage: Arc<S>, ns: &Namespace, args: &Args) -> Result<Duration, Error> {
    let started = Instant::now();
    let payload = serde_json::to_vec(&"x".repeat(args.payload.saturating_sub(2)))?;
    let chunks: Vec<std::ops::Range<usize>> =
        (0..args.tasks).step_by(args.batch.max(1)).map(|s| s..(s + args.batch).min(args.tasks)).collect();
    let chunks = Arc::new(std::sync::Mutex::new(chunks));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.concurrency.max(1) {
        let (storage, ns, chunks, payload) =
            (Arc::clone(&storage), ns.clone(), Arc::clone(&chunks), payload.clone());
        workers.spawn(async move {
            loop {
                let next = chunks.lock().map_err(|_| "poisoned")?.pop();
                let Some(range) = next else { return Ok::<(), Error>(()) };
                let mut tasks = Vec::with_capacity(range.len());
                for i in range {
                    tasks.push({
                        let mut t = NewTask::new(
                            TaskId::new(format!("far-{i:07}"))?,
                            "notify".to_owned(),
                            payload.clone(),
                        );
                        t.due = Due::After(Duration::from_secs(30 * 86_400));
                        t.max_attempts = 3;
                        t
                    });
                }
                for r in storage.submit_many(&ns, tasks).await? {
                    r?;
                }
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done??;
    }
    Ok(started.elapsed())
}

fn mib(b: i64) -> String {
    format!("{:.1} MiB", b as f64 / 1_048_576.0)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let redis = RedisStorage::connect(&args.redis_url).await?;
    let mysql = MySqlStorage::connect(&args.mysql_url).await?;
    let pid = std::process::id();
    let alone = Namespace::new(format!("mem-redis-{pid}"))?;
    let tiered_ns = Namespace::new(format!("mem-tiered-{pid}"))?;
    println!("{} far-future tasks (due in 30 days), {} B payload each", args.tasks, args.payload);

    let before = used_memory(&redis).await?;
    let took = submit_far(Arc::new(redis.clone()), &alone, &args).await?;
    let after = used_memory(&redis).await?;
    let redis_grew = i64::try_from(after).unwrap_or(0) - i64::try_from(before).unwrap_or(0);
    let per_task = redis_grew as f64 / args.tasks as f64;
    println!(
        "RedisStorage alone:  used_memory {} -> {} (+{}), {per_task:.0} B per task, submitted in {:.1} s",
        mib(before as i64),
        mib(after as i64),
        mib(redis_grew),
        took.as_secs_f64()
    );
    redis.purge(&alone).await?;

    let tiered = Arc::new(TieredStorage::new(redis.clone(), mysql.clone()));
    let before = used_memory(&redis).await?;
    let took = submit_far(Arc::clone(&tiered), &tiered_ns, &args).await?;
    let after = used_memory(&redis).await?;
    let tiered_grew = i64::try_from(after).unwrap_or(0) - i64::try_from(before).unwrap_or(0);
    let cold = mysql.counts(&tiered_ns).await?.total();
    let hot = redis.counts(&tiered_ns).await?.total();
    println!(
        "TieredStorage:       used_memory {} -> {} ({:+} B), {:.1} B per task, submitted in {:.1} s; \
         {hot} tasks in Redis, {cold} in MySQL",
        mib(before as i64),
        mib(after as i64),
        tiered_grew,
        tiered_grew as f64 / args.tasks as f64,
        took.as_secs_f64()
    );
    let saved_per_million = (redis_grew - tiered_grew) as f64 / args.tasks as f64 * 1_000_000.0;
    println!("Redis memory saved per million far-future tasks: {}", mib(saved_per_million as i64));
    redis.purge(&tiered_ns).await?;
    mysql.purge(&tiered_ns).await?;
    Ok(())
}
