//! The executor in a process of its own, for its peak RSS: the parent
//! pre-loads tasks and starts this binary with `--worker-ns`.

use std::{
    process::Command,
    sync::{Arc, atomic::AtomicUsize},
    time::{Duration, Instant},
};

use executor_core::{MemoryStorage, Namespace};

use crate::{
    Args, Store,
    backend::Backend,
    phases::{counting_executor, namespace, preload, wait_count},
    stats,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Child side: process `--worker-count` tasks, print the rate and VmHWM.
pub(crate) async fn run(args: &Args, ns: &str) -> Res<()> {
    let ns = Namespace::new(ns)?;
    match args.storage {
        Store::Redis => work(args.redis().await?, &ns, args).await,
        Store::Memory => work(MemoryStorage::new(), &ns, args).await,
        Store::Mysql => work(executor_mysql::MySqlStorage::connect(&args.mysql_url).await?, &ns, args).await,
        Store::Postgres => {
            work(executor_postgres::PostgresStorage::connect(&args.postgres_url).await?, &ns, args).await
        }
        Store::AnyRedis => {
            let storage = args.redis().await?;
            work(executor_any::AnyStorage::from(storage), &ns, args).await
        }
    }
}

async fn work<S: Backend>(storage: S, ns: &Namespace, args: &Args) -> Res<()> {
    let started = Arc::new(AtomicUsize::new(0));
    let executor = counting_executor(storage, ns, args.worker_concurrency, Arc::clone(&started)).await?;
    let cpu0 = stats::process_cpu_secs().unwrap_or(0.0);
    let t0 = Instant::now();
    let running = executor.start();
    let took = wait_count(&started, args.worker_count, t0, Duration::from_secs(600)).await?;
    running.shutdown().await?;
    let cpu = stats::process_cpu_secs().unwrap_or(0.0) - cpu0;
    println!(
        "RESULT rate={:.0} vmhwm_kb={} cpu_us={:.1}",
        stats::rate(args.worker_count, took),
        stats::peak_rss_kb().unwrap_or(0),
        cpu * 1e6 / args.worker_count as f64
    );
    Ok(())
}

/// Parent side: pre-load, run the child, report.
pub(crate) async fn rss<S: Backend>(storage: &S, args: &Args, set_rps: Option<f64>) -> Res<()> {
    if args.storage == Store::Memory {
        println!("rss       skipped: the memory store cannot be shared with a child process");
        return Ok(());
    }
    let ns = namespace("rss")?;
    preload(storage, &ns, args.backlog, args.batch_size).await?;
    let storage_flag = match args.storage {
        Store::Mysql => "mysql",
        Store::Postgres => "postgres",
        _ => "redis",
    };
    let out = Command::new(std::env::current_exe()?)
        .args(["--storage", storage_flag, "--redis-url", &args.redis_url, "--mysql-url", &args.mysql_url])
        .args(["--postgres-url", &args.postgres_url])
        .args(["--worker-ns", ns.as_str(), "--worker-count", &args.backlog.to_string()])
        .args(["--worker-concurrency", "64"])
        .args(args.claim_batch.map(|n| vec!["--claim-batch".to_owned(), n.to_string()]).unwrap_or_default())
        .args(args.redis_scripts.then_some("--redis-scripts"))
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .ok_or_else(|| format!("worker gave no result: {text} {}", String::from_utf8_lossy(&out.stderr)))?;
    let field = |name: &str| -> f64 {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    let rate = field("rate=");
    println!(
        "rss       executor process, concurrency 64, backlog {}: {rate:.0} tasks/s{}, peak RSS (VmHWM) {:.1} MB, executor CPU {:.1} us/task",
        args.backlog,
        set_rps.map(|c| format!(" = {:.2} x SET", rate / c)).unwrap_or_default(),
        field("vmhwm_kb=") / 1024.0,
        field("cpu_us=")
    );
    storage.drop_namespace(&ns).await;
    Ok(())
}
