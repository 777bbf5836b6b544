//! The stats seed: bursts of user activity each ask for a statistics refresh;
//! a debounced task runs the refresh once per user after the activity calms
//! down, and an in-process coalescer absorbs most repeats before they reach
//! the store. Exits by itself in a few seconds.
//!
//! ```sh
//! cargo run --example stat_refresh
//! cargo run --example stat_refresh -- --storage redis   # REDIS_URL
//! cargo run --example stat_refresh -- --storage mysql   # MYSQL_URL
//! ```

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use clap::Parser;
use examples::StoreArgs;
use executor_core::{Executor, Namespace, TaskState, coalesce::Coalescer, prelude::*};

#[derive(Debug, Serialize, Deserialize)]
struct Refresh {
    user: u32,
    /// Sequence number of the activity that asked for it (the last one wins).
    seq: u64,
}

/// Stands for the statistics store, given to the executor with `.data(..)`:
/// how many refreshes ran, and the last activity each user's refresh saw.
#[derive(Clone, Debug, Default)]
struct StatsStore {
    refreshes: Arc<AtomicU64>,
    last_seen: Arc<Mutex<HashMap<u32, u64>>>,
}

/// Recomputes one user's statistics (here: records which activity it saw).
#[reliable_task(name = "refresh_user_stats", retry_limit = 2)]
async fn refresh_user_stats(param: Refresh, stats: Data<StatsStore>) {
    stats.refreshes.fetch_add(1, Ordering::SeqCst);
    stats.last_seen.lock().unwrap_or_else(PoisonError::into_inner).insert(param.user, param.seq);
}

#[derive(Debug, Parser)]
#[command(about = "Debounced statistics refreshes with an in-process coalescer")]
struct Args {
    #[command(flatten)]
    store: StoreArgs,
    /// Users whose activity triggers refreshes.
    #[arg(long, default_value_t = 50)]
    users: u32,
    /// Activity events per user.
    #[arg(long, default_value_t = 200)]
    events: u32,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let ns = format!("stat-refresh-{}", std::process::id());
    let storage = args.store.connect().await?;
    let out = run(storage.clone(), ns.clone(), &args).await;
    // Leaves nothing behind in a shared Redis or MySQL.
    storage.purge(&Namespace::new(ns)?).await?;
    out
}

async fn run<S: executor_core::storage::ExecutorStorage>(
    storage: S,
    ns: String,
    args: &Args,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = StatsStore::default();
    let executor =
        Executor::builder(storage).namespace(ns).concurrency(16).data(store.clone()).build().await?;
    let running = executor.start();
    // Repeats of one user's refresh within 100 ms are absorbed in process.
    let coalescer = Coalescer::new(executor.clone()).rule("refresh_user_stats", Duration::from_millis(100));
    let started = Instant::now();
    let seq = AtomicU64::new(0);
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut ids = HashMap::new();

    // Bursts: each round, every user is active a few times in quick succession.
    let rounds = args.events / 10;
    for _round in 0..rounds {
        for user in 0..args.users {
            for _ in 0..10 {
                let n = seq.fetch_add(1, Ordering::SeqCst);
                let id = refresh_user_stats::with(Refresh { user, seq: n })
                    .debounce(format!("stats:user-{user}"), Duration::from_millis(400))
                    .max_wait(Duration::from_secs(5))
                    .submit(&coalescer)
                    .await?
                    .id;
                last.insert(user, n);
                ids.insert(user, id);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let submitted = seq.load(Ordering::SeqCst);
    let submit_time = started.elapsed();

    // Wait for every user's refresh to finish.
    for id in ids.values() {
        let record = executor.wait_for(id, Duration::from_secs(30)).await?;
        assert_eq!(record.state, TaskState::Completed, "{record:?}");
    }
    loop {
        let counts = executor.counts().await?;
        if counts.get(TaskState::Created) + counts.get(TaskState::Pending) + counts.get(TaskState::Running)
            == 0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.shutdown().await?;

    let stats = coalescer.stats();
    let refreshes = store.refreshes.load(Ordering::SeqCst);
    let seen = store.last_seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let fresh = last.iter().filter(|(user, seq)| seen.get(user) == Some(seq)).count();
    println!("activity events submitted : {submitted} over {submit_time:?}");
    println!("absorbed in process        : {}", stats.absorbed);
    println!(
        "reached the store          : {} ({} first submits + {} flushes)",
        stats.store_writes(),
        stats.forwarded,
        stats.flushed
    );
    println!("refreshes run              : {refreshes} for {} users", args.users);
    println!("refreshes that saw the user's last activity: {fresh} of {}", args.users);
    Ok(())
}
