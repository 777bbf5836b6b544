//! Claim latency of one queue with nothing else stored, then with
//! `--parked` tasks (default 1,000,000) waiting in a paused other queue
//!: a claim reads only the levels of the queues it serves that
//! are not paused, so the parked tasks should cost it nothing.
//!
//! ```sh
//! cargo run --release -p reliable-executor-redis --example paused_claim -- [--parked N] [--claims N]
//! ```
//!
//! `REDIS_URL` (default `redis://127.0.0.1:6379`). The namespace is purged
//! at the end.

use executor_core::storage::QueueControl;
use std::time::{Duration, Instant};

use executor_core::{
    Namespace, QueueName, Result, WorkerId,
    queue::{ClaimPlan, QueueShare},
    storage::{NewTask, Storage},
};
use reliable_executor_redis::RedisStorage;

const LEASE: Duration = Duration::from_secs(600);
const BATCH: usize = 10;

fn task(i: usize, queue: &QueueName) -> NewTask {
    let mut t = NewTask::new(executor_core::TaskId::generate(), "noop", b"{}".to_vec());
    t.queue = queue.clone();
    t.priority = (i % 3) as u8;
    t
}

async fn submit(s: &RedisStorage, ns: &Namespace, queue: &QueueName, n: usize) -> Result<()> {
    for from in (0..n).step_by(10_000) {
        let tasks = (from..n.min(from + 10_000)).map(|i| task(i, queue)).collect();
        for answer in s.submit_many(ns, tasks).await? {
            answer?;
        }
    }
    Ok(())
}

/// p50 and p99 of `claims` claims of `BATCH` tasks by `plan`, in µs.
async fn measure(s: &RedisStorage, ns: &Namespace, plan: &ClaimPlan, claims: usize) -> Result<(u128, u128)> {
    let worker = WorkerId::generate();
    let mut took = Vec::with_capacity(claims);
    for _ in 0..claims {
        let started = Instant::now();
        let got = s.claim(ns, &worker, plan, LEASE).await?;
        took.push(started.elapsed().as_micros());
        if got.len() != BATCH {
            return Err(executor_core::Error::Runtime(format!(
                "a claim took {} tasks, not {BATCH}",
                got.len()
            )));
        }
    }
    took.sort_unstable();
    Ok((took[claims / 2], took[claims * 99 / 100]))
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<()> {
    let parked_n = arg("--parked", 1_000_000);
    let claims = arg("--claims", 2_000);
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let s = RedisStorage::connect(&url).await?;
    let ns = Namespace::new(format!("paused-claim-{}", std::process::id()))?;
    let (work, parked) = (QueueName::new("work")?, QueueName::new("parked")?);
    let plans = [
        ("plan [work]", ClaimPlan::single(work.clone(), BATCH)),
        (
            "plan [work, parked (paused)]",
            ClaimPlan::new(vec![QueueShare::new(parked.clone(), 5), QueueShare::new(work.clone(), 5)], BATCH),
        ),
    ];
    let run = async {
        let mut rows = Vec::new();
        for (phase, parked_now) in [("0 parked", 0), ("parked", parked_n)] {
            if parked_now > 0 {
                let started = Instant::now();
                submit(&s, &ns, &parked, parked_now).await?;
                s.pause_queue(&ns, &parked, true).await?;
                eprintln!("{parked_now} tasks parked in a paused queue in {:?}", started.elapsed());
            }
            for (name, plan) in &plans {
                submit(&s, &ns, &work, claims * BATCH).await?;
                let (p50, p99) = measure(&s, &ns, plan, claims).await?;
                rows.push(format!(
                    "{phase:>9} ({parked_now:>7}) | {name:<30} | p50 {p50:>5} µs | p99 {p99:>5} µs"
                ));
            }
        }
        Ok::<_, executor_core::Error>(rows)
    };
    let rows = run.await;
    s.purge(&ns).await?;
    for row in rows? {
        println!("{row}");
    }
    Ok(())
}
