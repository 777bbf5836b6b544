//! Throughput and latency of `MySqlStorage` on this machine, next to the
//! server's own ceiling measured in the same run: single-row autocommit
//! `UPDATE ... WHERE id = ?` by primary key from as many connections.
//!
//! ```text
//! cargo run --release -p reliable-executor-mysql --example mysql_bench -- \
//!     [--tasks 20000] [--runs 3] [--large-rows 1000000] [--connections 16]
//! ```
//!
//! `MYSQL_URL` (default `mysql://root@127.0.0.1:3306/test`) names the server.
//! Each figure is the median of `--runs` runs.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use executor_core::{
    Executor, Handler, Namespace, TaskContext, TaskId,
    queue::ClaimPlan,
    storage::{NewTask, Storage},
};
use reliable_executor_mysql::{MySqlOptions, MySqlStorage};
use tokio::{sync::mpsc, time::Instant};

type Res<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Args {
    url: String,
    tasks: usize,
    runs: usize,
    large_rows: usize,
    connections: u32,
}

fn args() -> Res<Args> {
    let mut a = Args {
        url: std::env::var("MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned()),
        tasks: 20_000,
        runs: 3,
        large_rows: 1_000_000,
        connections: 16,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--tasks" => a.tasks = value.parse()?,
            "--runs" => a.runs = value.parse()?,
            "--large-rows" => a.large_rows = value.parse()?,
            "--connections" => a.connections = value.parse()?,
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

fn task(name: &str, payload: Vec<u8>) -> NewTask {
    NewTask::new(TaskId::generate(), name, payload)
}

async fn clear(s: &MySqlStorage, ns: &Namespace) -> Res {
    loop {
        let done = sqlx::query("DELETE FROM reliable_executor_tasks WHERE ns = ? LIMIT 50000")
            .bind(ns.as_str())
            .execute(s.pool())
            .await?;
        if done.rows_affected() == 0 {
            return Ok(());
        }
    }
}

/// The ceiling: `connections` loops of single-row autocommit UPDATEs by
/// primary key, each on its own row, for `secs` seconds. `dedicated`: each
/// loop holds one connection (what `mysqlslap` measures); otherwise each
/// UPDATE takes a connection from the pool and gives it back, as the
/// storage's own statements do (sqlx 0.9 pings on both).
async fn update_ceiling(pool: &sqlx::MySqlPool, connections: u32, secs: u64, dedicated: bool) -> Res<f64> {
    sqlx::query("CREATE TABLE IF NOT EXISTS rex_bench_counter (id INT PRIMARY KEY, n BIGINT NOT NULL)")
        .execute(pool)
        .await?;
    sqlx::query("INSERT IGNORE INTO rex_bench_counter SELECT seq, 0 FROM seq_1_to_256").execute(pool).await?;
    let done = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + Duration::from_secs(secs);
    let mut loops = Vec::new();
    for i in 0..connections {
        let (pool, done) = (pool.clone(), Arc::clone(&done));
        loops.push(tokio::spawn(async move {
            let mut held = if dedicated { Some(pool.acquire().await?) } else { None };
            while Instant::now() < end {
                let q = sqlx::query("UPDATE rex_bench_counter SET n = n + 1 WHERE id = ?").bind(i + 1);
                match held.as_mut() {
                    Some(conn) => q.execute(&mut **conn).await?,
                    None => q.execute(&pool).await?,
                };
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, sqlx::Error>(())
        }));
    }
    for l in loops {
        l.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / secs as f64)
}

async fn submit_single(s: &MySqlStorage, ns: &Namespace, n: usize) -> Res<f64> {
    let start = Instant::now();
    for _ in 0..n {
        s.submit(ns, task("noop", b"null".to_vec())).await?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

async fn submit_batched(s: &MySqlStorage, ns: &Namespace, n: usize) -> Res<f64> {
    let start = Instant::now();
    let mut left = n;
    while left > 0 {
        let k = left.min(500);
        for r in s.submit_many(ns, (0..k).map(|_| task("noop", b"null".to_vec())).collect()).await? {
            r?;
        }
        left -= k;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// The storage alone, without the runtime: `claimers` loops, each claiming
/// up to `batch` tasks and finishing them concurrently, until `n` are done.
async fn storage_only(s: &MySqlStorage, ns: &Namespace, n: usize, claimers: usize, batch: usize) -> Res<f64> {
    submit_batched(s, ns, n).await?;
    let start = Instant::now();
    let mut loops = Vec::new();
    for _ in 0..claimers {
        let (s, ns) = (s.clone(), ns.clone());
        loops.push(tokio::spawn(async move {
            let me = executor_core::WorkerId::generate();
            loop {
                let tasks =
                    s.claim(&ns, &me, &ClaimPlan::default_queue(batch), Duration::from_secs(60)).await?;
                if tasks.is_empty() {
                    return Ok::<_, executor_core::Error>(());
                }
                let mut finishing = tokio::task::JoinSet::new();
                for lease in tasks.iter().filter_map(|t| t.lease()) {
                    let (s, ns) = (s.clone(), ns.clone());
                    finishing.spawn(async move {
                        s.finish(&ns, &lease, executor_core::storage::Finish::Completed).await
                    });
                }
                while let Some(r) = finishing.join_next().await {
                    r.map_err(|e| executor_core::Error::storage(e, false))??;
                }
            }
        }));
    }
    for l in loops {
        l.await??;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// Server-wide statement counters (`SHOW GLOBAL STATUS`), to tell how many
/// statements and commits a processed task costs.
async fn server_counters(s: &MySqlStorage) -> Res<[f64; 3]> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_commit', 'Com_stmt_execute')",
    )
    .fetch_all(s.pool())
    .await?;
    let get = |name: &str| {
        rows.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).and_then(|(_, v)| v.parse::<f64>().ok())
    };
    Ok([
        get("Questions").unwrap_or(0.0),
        get("Com_stmt_execute").unwrap_or(0.0),
        get("Com_commit").unwrap_or(0.0),
    ])
}

/// Tasks completed per second by one executor at `concurrency`, with `n`
/// tasks already waiting; prints the statements each task cost.
async fn processing(s: &MySqlStorage, ns: &Namespace, n: usize, concurrency: usize) -> Res<f64> {
    submit_batched(s, ns, n).await?;
    let before = server_counters(s).await?;
    let ran = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&ran);
    let executor = Executor::builder(s.clone())
        .namespace(ns.as_str())
        .concurrency(concurrency)
        .handler(Handler::new("noop", move |_: (), _ctx: TaskContext| {
            counter.fetch_add(1, Ordering::Relaxed);
            async {}
        }))
        .build()
        .await?;
    let start = Instant::now();
    let running = executor.start();
    // Watch the handler count, not the table: a COUNT(*) every few ms over
    // thousands of waiting rows would take the server's CPU from the run.
    while ran.load(Ordering::Relaxed) < n as u64 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Then wait for the last finishes to land.
    loop {
        let busy: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM reliable_executor_tasks WHERE ns = ? AND state IN ('CREATED', 'PENDING', 'RUNNING')",
        )
        .bind(ns.as_str())
        .fetch_one(s.pool())
        .await?;
        if busy == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    running.shutdown().await?;
    let after = server_counters(s).await?;
    let per = |i: usize| (after[i] - before[i]) / n as f64;
    println!(
        "  concurrency {concurrency}: {rate:.0}/s; per task: {:.2} statements ({:.2} prepared executions, \
         {:.2} explicit commits)",
        per(0),
        per(1),
        per(2)
    );
    Ok(rate)
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Due→start latency on an idle executor: tasks due now, submitted one at
/// a time by `submitter` (the executor's own storage: in-process wake-up;
/// another storage: polling), measured from the moment the submit returned
/// (the row is committed, so the task is due) to the handler's start.
/// Returns (p50, p99) in ms.
async fn latency(s: &MySqlStorage, submitter: &MySqlStorage, ns: &Namespace, n: usize) -> Res<(f64, f64)> {
    let (tx, mut rx) = mpsc::unbounded_channel::<u64>();
    let executor = Executor::builder(s.clone())
        .namespace(ns.as_str())
        .concurrency(16)
        .handler(Handler::new("stamp", move |_: (), _ctx: TaskContext| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(now_us());
            }
        }))
        .build()
        .await?;
    let running = executor.start();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut seen = Vec::with_capacity(n);
    for i in 0..n {
        // Irregular gaps, so the waiter is caught at every point of its backoff.
        tokio::time::sleep(Duration::from_millis(20 + (i as u64 * 37) % 300)).await;
        submitter.submit(ns, task("stamp", b"null".to_vec())).await?;
        let due = now_us();
        if let Some(started) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await? {
            seen.push(started.saturating_sub(due) as f64 / 1000.0);
        }
    }
    running.shutdown().await?;
    seen.sort_by(|a, b| a.total_cmp(b));
    let pick = |q: f64| seen.get(((seen.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
    Ok((pick(0.5), pick(0.99)))
}

/// Fills `ns` with `rows` COMPLETED tasks, in bulk: finished in the last
/// `rows` milliseconds on the server's clock (retained history, well inside
/// the default day of retention, so the leader's trim leaves them alone), or
/// with `expired`, finished in 1970 (a backlog the trim deletes while the
/// run goes on).
async fn fill(s: &MySqlStorage, ns: &Namespace, rows: usize, expired: bool) -> Res {
    let finished = if expired { "1000 + seq" } else { "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - seq" };
    let mut from = 1;
    while from <= rows {
        let to = (from + 99_999).min(rows);
        let sql = format!(
            "INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, attempts, max_attempts, fence, \
             created_at, due_at, started_at, finished_at) SELECT ?, CONCAT('bg-', seq), 'noop', 'COMPLETED', \
             'null', 1, 3, 1, 1, 1, 1, {finished} FROM seq_{from}_to_{to}"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(ns.as_str()).execute(s.pool()).await?;
        from = to + 1;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Res {
    let a = args()?;
    let s = MySqlOptions::new().max_connections(a.connections).connect(&a.url).await?;
    let other = MySqlOptions::new().max_connections(2).connect(&a.url).await?;
    // The ceiling runs on a pool of its own: the storage keeps the
    // connections it used, so they are not free in its pool.
    let ceiling_pool =
        sqlx::mysql::MySqlPoolOptions::new().max_connections(a.connections).connect(&a.url).await?;
    let ns = Namespace::new("bench-mysql")?;
    clear(&s, &ns).await?;
    let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(s.pool()).await?;
    println!(
        "server {version}; {} tasks per processing run; {} connections; median of {} runs",
        a.tasks, a.connections, a.runs
    );

    let (mut ceiling, mut single, mut batched, mut c16, mut c64) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut ceiling_one, mut ceiling_pooled, mut ratios) = (vec![], vec![], vec![]);
    for run in 0..a.runs {
        ceiling_one.push(update_ceiling(&ceiling_pool, 1, 2, true).await?);
        ceiling_pooled.push(update_ceiling(&ceiling_pool, a.connections, 3, false).await?);
        single.push(submit_single(&s, &ns, 2_000).await?);
        clear(&s, &ns).await?;
        batched.push(submit_batched(&s, &ns, a.tasks).await?);
        clear(&s, &ns).await?;
        c16.push(processing(&s, &ns, a.tasks, 16).await?);
        clear(&s, &ns).await?;
        // The ceiling right before and right after the run it is compared
        // with: other load on the machine moves both alike.
        let before = update_ceiling(&ceiling_pool, a.connections, 4, true).await?;
        c64.push(processing(&s, &ns, a.tasks, 64).await?);
        let after = update_ceiling(&ceiling_pool, a.connections, 4, true).await?;
        clear(&s, &ns).await?;
        let alone = storage_only(&s, &ns, a.tasks, 4, 16).await?;
        clear(&s, &ns).await?;
        println!("  storage alone (4 claimers x 16, finishes concurrent): {alone:.0}/s");
        ceiling.push((before + after) / 2.0);
        ratios.push(c64[run] / ceiling[run]);
        println!(
            "run {run}: ceiling {before:.0}/s before, {after:.0}/s after; submit {:.0}/s single, {:.0}/s batched; \
             process {:.0}/s at 16, {:.0}/s at 64 = {:.2} x ceiling",
            single[run], batched[run], c16[run], c64[run], ratios[run]
        );
    }
    let ceiling = median(ceiling);
    let c64 = median(c64);
    println!("ceiling: single-row autocommit UPDATE by PK, {} connections: {ceiling:.0}/s", a.connections);
    println!("ceiling: the same from one connection: {:.0}/s", median(ceiling_one));
    let pooled = median(ceiling_pooled);
    println!("ceiling: the same through the pool, connection taken per UPDATE: {pooled:.0}/s");
    println!("submit, one per call:       {:.0}/s", median(single));
    println!("submit, batches of 500:     {:.0}/s", median(batched));
    println!("processing, concurrency 16: {:.0}/s", median(c16));
    println!(
        "processing, concurrency 64: {c64:.0}/s; median of the per-run ratios to the ceiling around it: {:.2}",
        median(ratios)
    );

    let (mut in_p50, mut in_p99, mut x_p50, mut x_p99) = (vec![], vec![], vec![], vec![]);
    for _ in 0..a.runs {
        let (p50, p99) = latency(&s, &s, &ns, 40).await?;
        in_p50.push(p50);
        in_p99.push(p99);
        let (p50, p99) = latency(&s, &other, &ns, 40).await?;
        x_p50.push(p50);
        x_p99.push(p99);
        clear(&s, &ns).await?;
    }
    println!(
        "due->start, submit in the same process:    p50 {:.1} ms, p99 {:.1} ms",
        median(in_p50),
        median(in_p99)
    );
    println!(
        "due->start, submit from another process:   p50 {:.1} ms, p99 {:.1} ms",
        median(x_p50),
        median(x_p99)
    );

    let mut by_rows = Vec::new();
    for (rows, expired) in [(10_000, false), (a.large_rows, false), (a.large_rows, true)] {
        clear(&s, &ns).await?;
        let t = Instant::now();
        fill(&s, &ns, rows, expired).await?;
        sqlx::query("ANALYZE TABLE reliable_executor_tasks").execute(s.pool()).await?;
        let kind = if expired { "expired (the trim deletes them during the runs)" } else { "retained" };
        println!("filled {rows} completed rows, {kind}, in {:?}", t.elapsed());
        let mut rates = Vec::new();
        for _ in 0..a.runs {
            rates.push(processing(&s, &ns, a.tasks, 64).await?);
            sqlx::query("DELETE FROM reliable_executor_tasks WHERE ns = ? AND id NOT LIKE 'bg-%'")
                .bind(ns.as_str())
                .execute(s.pool())
                .await?;
        }
        let rate = median(rates);
        println!("processing, concurrency 64, {rows} {kind} rows in the table: {rate:.0}/s");
        by_rows.push(rate);
    }
    if let [small, large, trimmed] = by_rows[..] {
        println!("{} rows vs 10000: {:.0} %", a.large_rows, 100.0 * large / small);
        println!(
            "while the trim deletes {} expired rows: {:.0} % of the 10000-row rate",
            a.large_rows,
            100.0 * trimmed / small
        );
    }
    clear(&s, &ns).await?;
    Ok(())
}
