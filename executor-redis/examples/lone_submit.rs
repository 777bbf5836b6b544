//! One submit at a time, as a web handler awaits one per request, beside
//! the floor it is held to: a raw `EVALSHA` of `return 1` on the same
//! connection pool. Each round makes one call of each path, in an order
//! that rotates from round to round, so every path sees the same machine:
//! the raw call; the storage's `submit` of a plain task under a generated
//! id; the same under an id of the caller's (both take `submit_one.lua`:
//! the storage chooses the path from its own state, not from the id); and
//! `Client::submit_new` (the task checked by core first), each path in a
//! namespace of its own. Prints each path's p50 and p99 and its p50 against
//! the raw call's, and the server's own time per call (`INFO
//! commandstats`: `FCALL` for the submits, which call the function
//! library, `EVALSHA` for the raw call), per run, then the median of the
//! runs' ratios. On a server that runs no functions the submits are
//! `EVALSHA` calls too, and the server's figures mix them.
//!
//! ```sh
//! cargo run --release -p reliable-executor-redis --example lone_submit -- [--submits N] [--runs R]
//! ```
//!
//! `REDIS_URL` (default `redis://127.0.0.1:6379`). The namespaces are
//! purged at the end of each run.

use std::time::Instant;

use executor_core::{
    Client, Namespace, Result, Submit, TaskId,
    storage::{NewTask, Storage},
};
use fred::interfaces::{ClientLike, LuaInterface};
use reliable_executor_redis::RedisStorage;

/// Rounds before the measured ones: connections, script cache, allocator.
const WARMUP: usize = 200;

/// The paths timed, the raw call first.
const PATHS: [&str; 4] =
    ["raw EVALSHA `return 1`", "submit, generated id", "submit, chosen id", "Client::submit_new"];

/// A plain no-op task, one attempt, as a request handler submits one.
fn task(id: Option<TaskId>) -> NewTask {
    let mut task = match id {
        Some(id) => NewTask::new(id, "noop", b"null".to_vec()),
        None => NewTask::with_generated_id("noop", b"null".to_vec()),
    };
    task.max_attempts = 1;
    task
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The value at quantile `q` of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * q).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

/// The server's total `calls` and `usec` of each command in `names`, from
/// `INFO commandstats`.
async fn commandstats(storage: &RedisStorage, names: &[&str]) -> Result<Vec<(f64, f64)>> {
    let info: String =
        storage.pool().next().info(Some(fred::types::InfoKind::CommandStats)).await.map_err(storage_error)?;
    Ok(names
        .iter()
        .map(|name| {
            let line = info.lines().find(|l| l.starts_with(&format!("cmdstat_{name}:"))).unwrap_or_default();
            let field = |key: &str| {
                line.split([':', ','])
                    .find_map(|kv| kv.strip_prefix(key))
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
            };
            (field("calls="), field("usec="))
        })
        .collect())
}

/// One run: `n` measured rounds; each path's (p50, p99) in µs.
async fn run(storage: &RedisStorage, sha: &str, n: usize) -> Result<Vec<(f64, f64)>> {
    let mut spaces = Vec::new();
    for _ in 1..PATHS.len() {
        spaces.push(Namespace::new(format!("lone-submit-{}", &TaskId::generate().as_str()[24..]))?);
    }
    let client = Client::without_name_check(storage.clone(), spaces[2].clone());
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(n); PATHS.len()];
    let before = commandstats(storage, &["fcall", "evalsha"]).await?;
    for round in 0..WARMUP + n {
        for k in 0..PATHS.len() {
            let path = (round + k) % PATHS.len();
            let t = Instant::now();
            match path {
                0 => {
                    let one: i64 = storage.pool().next().evalsha(sha, (), ()).await.map_err(storage_error)?;
                    if one != 1 {
                        return Err(executor_core::Error::Runtime(format!("`return 1` answered {one}")));
                    }
                }
                1 => drop(storage.submit(&spaces[0], task(None)).await?),
                2 => drop(storage.submit(&spaces[1], task(Some(TaskId::generate()))).await?),
                _ => drop(client.submit_new(task(None)).await?),
            }
            if round >= WARMUP {
                times[path].push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    let after = commandstats(storage, &["fcall", "evalsha"]).await?;
    let shown: Vec<String> = ["FCALL", "EVALSHA"]
        .iter()
        .zip(after.iter().zip(&before))
        .map(|(name, ((calls, usec), (calls0, usec0)))| {
            format!("{name} {:.1} µs", (usec - usec0) / (calls - calls0).max(1.0))
        })
        .collect();
    println!("  server time per call: {}", shown.join(", "));
    for ns in &spaces {
        storage.purge(ns).await?;
    }
    Ok(times
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            (quantile(&v, 0.5), quantile(&v, 0.99))
        })
        .collect())
}

fn storage_error(e: fred::error::Error) -> executor_core::Error {
    executor_core::Error::storage(e.to_string(), false)
}

#[tokio::main]
async fn main() -> Result<()> {
    let n = arg("--submits", 3_000);
    let runs = arg("--runs", 5).max(1);
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let storage = RedisStorage::connect(&url).await?;
    let sha: String = storage.pool().next().script_load("return 1").await.map_err(storage_error)?;
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); PATHS.len()];
    for r in 1..=runs {
        println!("run {r} ({n} rounds)");
        let got = run(&storage, &sha, n).await?;
        let raw = got[0].0;
        for ((name, (p50, p99)), ratio) in PATHS.iter().zip(&got).zip(&mut ratios) {
            ratio.push(p50 / raw);
            println!("  {name:<24} p50 {p50:>6.1} µs  p99 {p99:>7.1} µs  {:.2} x raw", p50 / raw);
        }
    }
    println!("median of {runs} runs, p50 against the raw call's");
    for (name, mut ratio) in PATHS.iter().zip(ratios).skip(1) {
        ratio.sort_by(f64::total_cmp);
        let shown: Vec<String> = ratio.iter().map(|x| format!("{x:.2}")).collect();
        println!("  {name:<24} {:.2} x  ({})", quantile(&ratio, 0.5), shown.join(", "));
    }
    Ok(())
}
