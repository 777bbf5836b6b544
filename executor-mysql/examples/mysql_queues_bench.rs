//! Claims from one queue while another queue holds a large backlog
//!: the claim of queue `work` reads ten ranges of `ix_queue`
//! that hold `work`'s tasks only, so 1,000,000 tasks waiting in a paused
//! queue `bulk` (or one this claimer does not serve) must not slow it.
//!
//! ```text
//! cargo run --release -p reliable-executor-mysql --example mysql_queues_bench -- \
//!     [--tasks 20000] [--backlog 1000000] [--runs 3] [--batch 64]
//! ```
//!
//! `MYSQL_URL` (default `mysql://root@127.0.0.1:3306/test`) names the server.
//! Prints the claim rate with the backlog absent, present and paused,
//! present and not paused (not in the plan), each the median of `--runs`,
//! then EXPLAIN and ANALYZE FORMAT=JSON of the claim's SELECT at full size.

use executor_core::storage::QueueControl;
use std::time::Duration;

use executor_core::{Namespace, QueueName, WorkerId, queue::ClaimPlan, storage::Storage};
use reliable_executor_mysql::{MySqlOptions, MySqlStorage};
use tokio::time::Instant;

type Res<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Args {
    url: String,
    tasks: usize,
    backlog: usize,
    runs: usize,
    batch: usize,
}

fn args() -> Res<Args> {
    let mut a = Args {
        url: std::env::var("MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned()),
        tasks: 20_000,
        backlog: 1_000_000,
        runs: 3,
        batch: 64,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--tasks" => a.tasks = value.parse()?,
            "--backlog" => a.backlog = value.parse()?,
            "--runs" => a.runs = value.parse()?,
            "--batch" => a.batch = value.parse()?,
            "--url" => a.url = value,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(a)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// `rows` waiting tasks in `queue`, due in the past, priorities 0..9, in
/// bulk (`INSERT ... SELECT` from MariaDB's sequence engine).
async fn fill(s: &MySqlStorage, ns: &Namespace, queue: &str, prefix: &str, rows: usize) -> Res {
    let mut from = 1;
    while from <= rows {
        let to = (from + 99_999).min(rows);
        let sql = format!(
            "INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at, \
             queue, priority) SELECT ?, CONCAT(?, seq), 'noop', 'CREATED', 'null', 3, 1, \
             CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - 600000 + seq % 1000, ?, seq % 10 \
             FROM seq_{from}_to_{to}"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ns.as_str())
            .bind(prefix)
            .bind(queue)
            .execute(s.pool())
            .await?;
        from = to + 1;
    }
    Ok(())
}

/// Claims every task of `work` in batches; claims per second.
async fn claim_all(s: &MySqlStorage, ns: &Namespace, a: &Args) -> Res<f64> {
    sqlx::query("DELETE FROM reliable_executor_tasks WHERE ns = ? AND queue = 'work'")
        .bind(ns.as_str())
        .execute(s.pool())
        .await?;
    fill(s, ns, "work", "w-", a.tasks).await?;
    let plan = ClaimPlan::single(QueueName::new("work")?, a.batch);
    let me = WorkerId::generate();
    let t = Instant::now();
    let mut n = 0;
    loop {
        let got = s.claim(ns, &me, &plan, Duration::from_secs(600)).await?;
        if got.is_empty() {
            break;
        }
        n += got.len();
    }
    if n != a.tasks {
        return Err(format!("claimed {n} of {}", a.tasks).into());
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

async fn rate(s: &MySqlStorage, ns: &Namespace, a: &Args, label: &str) -> Res<f64> {
    let mut rates = Vec::new();
    for _ in 0..a.runs {
        rates.push(claim_all(s, ns, a).await?);
    }
    let r = median(rates.clone());
    let runs: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
    println!("{label}: {r:.0} claims/s (runs {})", runs.join(", "));
    Ok(r)
}

const CLAIM_SELECT: &str = "SELECT CAST(0 AS SIGNED) AS branch, id, attempts, fence FROM \
     reliable_executor_tasks WHERE ns = 'bench-queues' AND queue = 'work' AND queue_rank IN \
     (0, 1, 2, 3, 4, 5, 6, 7, 8, 9) AND ready_at <= CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) \
     AND NOT EXISTS (SELECT 1 FROM reliable_executor_queues p WHERE p.ns = 'bench-queues' AND \
     p.queue = 'work' AND p.paused = 1) ORDER BY queue_rank, ready_at, id LIMIT 128 FOR UPDATE SKIP LOCKED";

async fn explain(s: &MySqlStorage) -> Res {
    let rows =
        sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN {CLAIM_SELECT}"))).fetch_all(s.pool()).await?;
    println!("EXPLAIN of the claim's SELECT of `work` (LIMIT 128):");
    for r in rows {
        use sqlx::Row;
        let cols: Vec<String> = (0..r.len())
            .map(|i| {
                r.try_get::<Option<String>, _>(i)
                    .ok()
                    .flatten()
                    .or_else(|| r.try_get::<Option<i64>, _>(i).ok().flatten().map(|v| v.to_string()))
                    .or_else(|| r.try_get::<Option<u64>, _>(i).ok().flatten().map(|v| v.to_string()))
                    .unwrap_or_else(|| "NULL".to_owned())
            })
            .collect();
        println!("| {} |", cols.join(" | "));
    }
    // ANALYZE runs the statement: its row locks end with it (autocommit).
    let json: Option<String> =
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("ANALYZE FORMAT=JSON {CLAIM_SELECT}")))
            .fetch_optional(s.pool())
            .await
            .unwrap_or_else(|e| Some(format!("ANALYZE FORMAT=JSON not available: {e}")));
    println!("ANALYZE FORMAT=JSON:\n{}", json.unwrap_or_default());
    Ok(())
}

#[tokio::main]
async fn main() -> Res {
    let a = args()?;
    let s = MySqlOptions::new().max_connections(4).connect(&a.url).await?;
    let ns = Namespace::new("bench-queues")?;
    s.purge(&ns).await?;
    let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(s.pool()).await?;
    println!(
        "server {version}; claiming {} tasks of `work` in batches of {}, one claimer; median of {} runs",
        a.tasks, a.batch, a.runs
    );
    let empty = rate(&s, &ns, &a, "no backlog").await?;
    let t = Instant::now();
    fill(&s, &ns, "bulk", "b-", a.backlog).await?;
    sqlx::query("ANALYZE TABLE reliable_executor_tasks").execute(s.pool()).await?;
    println!("inserted {} waiting tasks into `bulk` in {:?}", a.backlog, t.elapsed());
    // InnoDB merges the new index entries and purges in the background
    // for a while after a bulk insert: let it settle before measuring.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let bulk = QueueName::new("bulk")?;
    s.pause_queue(&ns, &bulk, true).await?;
    let paused = rate(&s, &ns, &a, "backlog in `bulk`, paused").await?;
    s.pause_queue(&ns, &bulk, false).await?;
    let unserved = rate(&s, &ns, &a, "backlog in `bulk`, not paused, not in the plan").await?;
    println!(
        "with the backlog: {:.0} % (paused), {:.0} % (not served) of the rate without it",
        100.0 * paused / empty,
        100.0 * unserved / empty
    );
    sqlx::query("DELETE FROM reliable_executor_tasks WHERE ns = ? AND queue = 'work'")
        .bind(ns.as_str())
        .execute(s.pool())
        .await?;
    fill(&s, &ns, "work", "w-", 1_000).await?;
    s.pause_queue(&ns, &bulk, true).await?;
    explain(&s).await?;
    let t = Instant::now();
    let got = s
        .claim(&ns, &WorkerId::generate(), &ClaimPlan::single(bulk.clone(), 64), Duration::from_secs(60))
        .await?;
    println!("a claim of paused `bulk`: {} tasks in {:?}", got.len(), t.elapsed());
    let t = Instant::now();
    let infos = s.queues(&ns).await?;
    println!("queues(): {:?} in {:?}", infos, t.elapsed());
    s.purge(&ns).await?;
    Ok(())
}
