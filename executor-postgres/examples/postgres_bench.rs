//! Throughput and latency of `PostgresStorage` on this machine, next to the
//! server's own ceiling measured in the same run: single-row autocommit
//! `UPDATE ... WHERE id = $1` by primary key from as many connections as the
//! storage uses, on a scratch table of this program's own.
//!
//! ```text
//! cargo build --release -p reliable-executor-postgres --example postgres_bench
//! target/release/examples/postgres_bench \
//!     [--tasks 20000] [--runs 3] [--large-rows 1000000] [--connections 16] [--latency-tasks 2000] \
//!     [--no-maintenance] [--only-latency | --only-backlog] [--url postgres://...]
//! ```
//!
//! `POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`, or
//! `--url`) names the server. Each figure is the median of `--runs` runs.
//! Each run measures, in this order:
//!
//! - the ceiling from one held connection, and from `--connections` loops
//!   taking a pooled connection per `UPDATE`;
//! - `submit`, one task per call (2,000 tasks), and `submit_many` in
//!   batches of 500 (`--tasks` tasks; its ratio is to the ceiling of the run);
//! - processing `--tasks` waiting no-op tasks with one `Executor`
//!   (storage `max_connections(--connections)`) at concurrency 16, then at
//!   concurrency 64 between two ceilings (`--connections` held connections,
//!   4 s each): the ratio compares the rate with their mean;
//! - the storage alone, without the runtime (4 claimers of 16).
//!
//! Then, `--runs` times, the pickup latency across processes: this process
//! submits one task every 5 ms (due now) while a worker executor in a child
//! process (this binary with `--worker`, default poll settings, so a pickup
//! within milliseconds can only come from LISTEN/NOTIFY) records its
//! handler's start on the wall clock; the figure is the time from the
//! submit's return to that start, over `--latency-tasks` tasks.
//!
//! Last, the backlog: the rate at concurrency 64 with 10,000 tasks waiting
//! (all of them processed) and with `--large-rows` waiting (the first
//! 10,000 and the first `--tasks`, topped up again after each run). The
//! backlogs are inserted straight into `reliable_executor_tasks`.
//!
//! Autovacuum is off on the CI server, so by default the program stands in
//! for it: `VACUUM (ANALYZE)` of the tasks table before each throughput and
//! latency run, before the large backlog and after each top-up of it, `ANALYZE` after loading each phase's tasks (outside
//! the timings). `--no-maintenance` does neither: the claims then run on
//! plans made for statistics that do not know the namespace.
//!
//! Every namespace used is purged and the scratch table dropped at the end,
//! also after an error or Ctrl-C.

use std::{
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use executor_core::{
    Executor, Handler, Namespace, RunningExecutor, StopHandle, TaskContext, TaskId,
    queue::ClaimPlan,
    storage::{NewTask, Storage},
};
use reliable_executor_postgres::{PostgresOptions, PostgresStorage};
use sqlx::{PgPool, Row};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
    time::{Instant, MissedTickBehavior},
};

type Res<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The server's clock in epoch milliseconds, as the storage stamps rows.
macro_rules! now_ms {
    () => {
        "(FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT)"
    };
}

struct Args {
    url: String,
    tasks: usize,
    runs: usize,
    large_rows: usize,
    connections: u32,
    latency_tasks: usize,
    /// Run `VACUUM (ANALYZE)` before each run and `ANALYZE` after loading
    /// each phase's tasks, standing in for autovacuum (off on the CI server).
    maintenance: bool,
    /// Set in the child process: run the worker executor of the latency
    /// phase on this namespace.
    worker: Option<String>,
    /// `--only-latency`: the pickup latency runs alone (no ceiling,
    /// throughput or backlog phases).
    only_latency: bool,
    /// `--only-backlog`: the backlog phase alone.
    only_backlog: bool,
}

fn args() -> Res<Args> {
    let mut a = Args {
        url: std::env::var("POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned()),
        tasks: 20_000,
        runs: 3,
        large_rows: 1_000_000,
        connections: 16,
        latency_tasks: 2_000,
        maintenance: true,
        worker: None,
        only_latency: false,
        only_backlog: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--no-maintenance" {
            a.maintenance = false;
            continue;
        }
        if flag == "--only-latency" {
            a.only_latency = true;
            continue;
        }
        if flag == "--only-backlog" {
            a.only_backlog = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--tasks" => a.tasks = value.parse()?,
            "--runs" => a.runs = value.parse()?,
            "--large-rows" => a.large_rows = value.parse()?,
            "--connections" => a.connections = value.parse()?,
            "--latency-tasks" => a.latency_tasks = value.parse()?,
            "--url" => a.url = value,
            "--worker" => a.worker = Some(value),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if a.runs == 0 || a.tasks == 0 || a.latency_tasks == 0 {
        return Err("--runs, --tasks and --latency-tasks must be at least 1".into());
    }
    Ok(a)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The value at quantile `q` of sorted `v`.
fn quantile(v: &[f64], q: f64) -> f64 {
    v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN)
}

fn task(name: &str, payload: Vec<u8>) -> NewTask {
    NewTask::new(TaskId::generate(), name, payload)
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// What a run holds, so the clean-up runs however the run ends.
struct Bench {
    s: PostgresStorage,
    /// The ceiling runs on a pool of its own: the storage keeps the
    /// connections it used, so they are not free in its pool.
    ceiling_pool: PgPool,
    process: Namespace,
    backlog: Namespace,
    latency: Namespace,
    maintenance: bool,
    /// Every executor started, so the clean-up can stop one an error left
    /// running before it purges (a running executor would write its leader
    /// and worker rows again).
    stops: Mutex<Vec<StopHandle>>,
}

impl Bench {
    async fn connect(a: &Args) -> Res<Self> {
        let s = PostgresOptions::new().max_connections(a.connections).connect(&a.url).await?;
        let ceiling_pool =
            sqlx::postgres::PgPoolOptions::new().max_connections(a.connections).connect(&a.url).await?;
        Ok(Self {
            s,
            ceiling_pool,
            process: Namespace::new("bench-postgres")?,
            backlog: Namespace::new("bench-postgres-backlog")?,
            latency: Namespace::new("bench-postgres-latency")?,
            maintenance: a.maintenance,
            stops: Mutex::new(Vec::new()),
        })
    }

    fn started(&self, running: &RunningExecutor) {
        if let Ok(mut stops) = self.stops.lock() {
            stops.push(running.stop_handle());
        }
    }

    /// Stops executors an error left running, purges every namespace and
    /// drops the scratch table; tries each step and returns the first error.
    async fn clean(&self) -> Res {
        let left: Vec<StopHandle> = self
            .stops
            .lock()
            .map(|mut stops| std::mem::take(&mut *stops))
            .unwrap_or_default()
            .into_iter()
            .filter(|h| !h.is_stopped())
            .collect();
        for h in &left {
            h.stop();
        }
        if !left.is_empty() {
            // Their no-op attempts drain at once; their last claim or
            // announcement lands within this.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let mut first: Option<Box<dyn std::error::Error + Send + Sync>> = None;
        for ns in [&self.process, &self.backlog, &self.latency] {
            if let Err(e) = self.clear(ns).await {
                first.get_or_insert(e);
            }
            // The leader, worker and queue rows, and any task left.
            if let Err(e) = self.s.purge(ns).await {
                first.get_or_insert(e.into());
            }
        }
        if let Err(e) =
            sqlx::query("DROP TABLE IF EXISTS rex_pg_bench_ceiling").execute(&self.ceiling_pool).await
        {
            first.get_or_insert(e.into());
        }
        first.map_or(Ok(()), Err)
    }

    /// Deletes the tasks of `ns` between phases, 100,000 rows per
    /// statement, found by `ctid`: a TID scan whatever the statistics say
    /// about `ns`. (`purge`'s `id IN (SELECT id ... LIMIT n)` becomes a
    /// nested loop comparing every row with every id when the statistics
    /// do not know `ns` yet.)
    async fn clear(&self, ns: &Namespace) -> Res {
        loop {
            let done = sqlx::query(
                "DELETE FROM reliable_executor_tasks WHERE ctid = ANY (ARRAY(SELECT ctid FROM \
                 reliable_executor_tasks WHERE ns = $1 LIMIT 100000))",
            )
            .bind(ns.as_str())
            .execute(self.s.pool())
            .await?;
            if done.rows_affected() == 0 {
                return Ok(());
            }
        }
    }

    /// Fresh planner statistics for the tasks just loaded, as autovacuum
    /// gives them (within its naptime, a minute by default) when it is on.
    async fn analyze(&self) -> Res {
        if self.maintenance {
            sqlx::query("ANALYZE reliable_executor_tasks").execute(self.s.pool()).await?;
        }
        Ok(())
    }

    /// Dead row versions removed (and statistics taken), as autovacuum would
    /// between runs.
    async fn vacuum(&self) -> Res {
        if self.maintenance {
            let t = Instant::now();
            sqlx::query("VACUUM (ANALYZE) reliable_executor_tasks").execute(self.s.pool()).await?;
            println!("  VACUUM (ANALYZE) reliable_executor_tasks in {:.1?}", t.elapsed());
        }
        Ok(())
    }

    /// Prints the size of the tasks table (shared with anything else using
    /// the database) and its partial claim index.
    async fn table_size(&self, when: &str) -> Res {
        let r = sqlx::query(
            "SELECT pg_total_relation_size('reliable_executor_tasks') AS total, \
             pg_relation_size('reliable_executor_tasks') AS heap, pg_relation_size('ix_waiting') AS waiting, \
             COALESCE(s.n_live_tup, 0) AS live, COALESCE(s.n_dead_tup, 0) AS dead \
             FROM (SELECT 1) one LEFT JOIN pg_stat_user_tables s ON s.relid = 'reliable_executor_tasks'::regclass",
        )
        .fetch_one(self.s.pool())
        .await?;
        let mb = |col: &str| -> Res<f64> { Ok(r.try_get::<i64, _>(col)? as f64 / 1048576.0) };
        println!(
            "  table reliable_executor_tasks {when}: {:.1} MB total, heap {:.1} MB, ix_waiting {:.1} MB; \
             ~{} live, ~{} dead rows",
            mb("total")?,
            mb("heap")?,
            mb("waiting")?,
            r.try_get::<i64, _>("live")?,
            r.try_get::<i64, _>("dead")?
        );
        Ok(())
    }
}

/// The ceiling: `connections` loops of single-row autocommit UPDATEs by
/// primary key, each on its own row, for `secs` seconds. `dedicated`: each
/// loop holds one connection (what `pgbench` measures); otherwise each
/// UPDATE takes a connection from the pool and gives it back.
async fn update_ceiling(pool: &PgPool, connections: u32, secs: u64, dedicated: bool) -> Res<f64> {
    let done = Arc::new(AtomicU64::new(0));
    let end = Instant::now() + Duration::from_secs(secs);
    let mut loops = Vec::new();
    for i in 0..connections {
        let (pool, done) = (pool.clone(), Arc::clone(&done));
        let id = i32::try_from(i + 1)?;
        loops.push(tokio::spawn(async move {
            let mut held = if dedicated { Some(pool.acquire().await?) } else { None };
            while Instant::now() < end {
                let q = sqlx::query("UPDATE rex_pg_bench_ceiling SET n = n + 1 WHERE id = $1").bind(id);
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

async fn submit_single(s: &PostgresStorage, ns: &Namespace, n: usize) -> Res<f64> {
    let start = Instant::now();
    for _ in 0..n {
        s.submit(ns, task("noop", b"null".to_vec())).await?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

async fn submit_batched(s: &PostgresStorage, ns: &Namespace, n: usize) -> Res<f64> {
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
async fn storage_only(b: &Bench, ns: &Namespace, n: usize, claimers: usize, batch: usize) -> Res<f64> {
    let s = &b.s;
    submit_batched(s, ns, n).await?;
    b.analyze().await?;
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

/// An executor on `ns` at `concurrency` whose no-op handler `noop` counts
/// its starts in `ran`.
async fn counting_executor(
    s: &PostgresStorage,
    ns: &Namespace,
    concurrency: usize,
    ran: &Arc<AtomicU64>,
) -> Res<Executor<PostgresStorage>> {
    let counter = Arc::clone(ran);
    Ok(Executor::builder(s.clone())
        .namespace(ns.as_str())
        .concurrency(concurrency)
        .handler(Handler::new("noop", move |_: (), _ctx: TaskContext| {
            counter.fetch_add(1, Ordering::Relaxed);
            async {}
        }))
        .build()
        .await?)
}

/// Tasks completed per second by one executor at `concurrency`, with `n`
/// tasks already waiting: until the last finish has landed.
async fn processing(b: &Bench, ns: &Namespace, n: usize, concurrency: usize) -> Res<f64> {
    let s = &b.s;
    submit_batched(s, ns, n).await?;
    b.analyze().await?;
    let ran = Arc::new(AtomicU64::new(0));
    let executor = counting_executor(s, ns, concurrency, &ran).await?;
    let start = Instant::now();
    let running = executor.start();
    b.started(&running);
    // Watch the handler count, not the table: a query every few ms would
    // take the server's CPU from the run.
    while ran.load(Ordering::Relaxed) < n as u64 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Then wait for the last finishes to land (two probes of the partial
    // indexes of waiting and running tasks).
    loop {
        let busy: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM reliable_executor_tasks WHERE ns = $1 AND state IN ('CREATED', \
             'PENDING')) OR EXISTS (SELECT 1 FROM reliable_executor_tasks WHERE ns = $1 AND state = 'RUNNING')",
        )
        .bind(ns.as_str())
        .fetch_one(s.pool())
        .await?;
        if !busy {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    running.shutdown().await?;
    println!("  concurrency {concurrency}: {rate:.0}/s");
    Ok(rate)
}

/// Inserts waiting tasks `from..=to` (`noop`, due since the statement's
/// start, ids `bl-<seq>` in claim order) straight into the table, 100,000
/// rows per statement.
async fn fill_waiting(s: &PostgresStorage, ns: &Namespace, from: i64, to: i64) -> Res {
    let mut lo = from;
    while lo <= to {
        let hi = (lo + 99_999).min(to);
        sqlx::query(concat!(
            "INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at) \
             SELECT $1, 'bl-' || lpad(g::TEXT, 10, '0'), 'noop', 'CREATED', convert_to('null', 'UTF8'), 3, ",
            now_ms!(),
            ", ",
            now_ms!(),
            " FROM generate_series($2::BIGINT, $3::BIGINT) AS g"
        ))
        .bind(ns.as_str())
        .bind(lo)
        .bind(hi)
        .execute(s.pool())
        .await?;
        lo = hi + 1;
    }
    Ok(())
}

/// An executor at concurrency 64 over `ns`, whose tasks are already
/// waiting: handler starts per second over the first `early` and the first
/// `n` starts.
async fn drain(b: &Bench, ns: &Namespace, early: usize, n: usize) -> Res<(f64, f64)> {
    let ran = Arc::new(AtomicU64::new(0));
    let executor = counting_executor(&b.s, ns, 64, &ran).await?;
    let start = Instant::now();
    let running = executor.start();
    b.started(&running);
    let mut early_took = None;
    loop {
        let got = ran.load(Ordering::Relaxed);
        if early_took.is_none() && got >= early as u64 {
            early_took = Some(start.elapsed());
        }
        if got >= n as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = start.elapsed();
    running.shutdown().await?;
    let early_took = early_took.unwrap_or(took);
    Ok((early as f64 / early_took.as_secs_f64(), n as f64 / took.as_secs_f64()))
}

/// Processing rates at concurrency 64 with 10,000 and with `--large-rows`
/// tasks waiting; prints them and their ratios.
async fn backlog(b: &Bench, a: &Args) -> Res {
    let ns = &b.backlog;
    let small: i64 = 10_000;
    let mut small_rates = Vec::new();
    for _ in 0..a.runs {
        b.clear(ns).await?;
        fill_waiting(&b.s, ns, 1, small).await?;
        b.analyze().await?;
        let (rate, _) = drain(b, ns, 10_000, 10_000).await?;
        println!("  concurrency 64, 10000 queued: {rate:.0}/s");
        small_rates.push(rate);
    }
    b.clear(ns).await?;
    let small_rate = median(small_rates);
    println!("processing, concurrency 64, 10000 queued (all processed): {small_rate:.0}/s");

    let large = i64::try_from(a.large_rows)?;
    let t = Instant::now();
    fill_waiting(&b.s, ns, 1, large).await?;
    println!("filled {large} waiting tasks in {:.1?}", t.elapsed());
    b.vacuum().await?;
    b.table_size(&format!("with {large} queued")).await?;
    let sample = a.tasks.min(a.large_rows);
    let early = sample.min(10_000);
    let (mut early_rates, mut sample_rates) = (Vec::new(), Vec::new());
    let mut next = large + 1;
    for _ in 0..a.runs {
        let (first, all) = drain(b, ns, early, sample).await?;
        println!(
            "  concurrency 64, {large} queued: {first:.0}/s over the first {early}, {all:.0}/s over the first {sample}"
        );
        early_rates.push(first);
        sample_rates.push(all);
        // Back to `large` waiting (the processed tasks stay as history).
        let to = next + i64::try_from(sample)? - 1;
        fill_waiting(&b.s, ns, next, to).await?;
        next = to + 1;
        // The claimed tasks' index entries are dead now: the vacuum that
        // autovacuum would run before the next minute, outside the timing.
        b.vacuum().await?;
    }
    b.table_size(&format!("after {} runs over {large} queued", a.runs)).await?;
    let (early_rate, sample_rate) = (median(early_rates), median(sample_rates));
    println!(
        "processing, concurrency 64, {large} queued: {early_rate:.0}/s over the first {early}, \
         {sample_rate:.0}/s over the first {sample}"
    );
    println!(
        "{large} queued vs 10000: {:.0} % (first {early}), {:.0} % (first {sample})",
        100.0 * early_rate / small_rate,
        100.0 * sample_rate / small_rate
    );
    let t = Instant::now();
    b.clear(ns).await?;
    println!("deleted the backlog in {:.1?}", t.elapsed());
    Ok(())
}

/// Pickup latencies of one latency run, in ms, sorted: from the submit's
/// return, and from its call (the time the payload carries).
struct Pickups {
    from_return: Vec<f64>,
    from_call: Vec<f64>,
    /// Median from the return over the first and over the last tenth of
    /// the tasks submitted: whether the pickup slows as the namespace
    /// fills with finished tasks.
    first_tenth: f64,
    last_tenth: f64,
    missing: usize,
}

/// One latency run: a worker executor in a child process, this process
/// submitting one task every 5 ms.
async fn pickup_latency(b: &Bench, a: &Args) -> Res<Pickups> {
    let ns = &b.latency;
    let n = a.latency_tasks;
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--worker", ns.as_str(), "--latency-tasks", &n.to_string(), "--url", &a.url])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("the worker's stdout is not piped")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await? {
            if line == "READY" {
                return Ok(true);
            }
        }
        Ok::<_, std::io::Error>(false)
    })
    .await??;
    if !ready {
        return Err(format!("the worker exited before it was ready: {:?}", child.wait().await?).into());
    }
    // Let the worker's first claim find nothing and settle into its wait.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut returned = Vec::with_capacity(n);
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    for seq in 0..n {
        tick.tick().await;
        let sent = now_us();
        b.s.submit(ns, task("stamp", format!("[{seq},{sent}]").into_bytes())).await?;
        returned.push(now_us());
    }
    // The worker prints `STARTED <seq> <sent_us> <started_us>` per task once
    // it has seen them all (or given up), then exits.
    let mut by_seq: Vec<(usize, f64)> = Vec::with_capacity(n);
    let mut from_call = Vec::with_capacity(n);
    tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await? {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let ["STARTED", seq, sent, started] = f[..]
                && let (Ok(seq), Ok(sent), Ok(started)) =
                    (seq.parse::<usize>(), sent.parse::<u64>(), started.parse::<u64>())
                && let Some(back) = returned.get(seq)
            {
                by_seq.push((seq, (started as f64 - *back as f64) / 1000.0));
                from_call.push((started as f64 - sent as f64) / 1000.0);
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await??;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    if !status.success() {
        return Err(format!("the latency worker failed: {status}").into());
    }
    let tenth = |lo: usize, hi: usize| {
        let mut v: Vec<f64> =
            by_seq.iter().filter(|(seq, _)| (lo..hi).contains(seq)).map(|(_, ms)| *ms).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        quantile(&v, 0.5)
    };
    let (first_tenth, last_tenth) = (tenth(0, n / 10), tenth(n - n / 10, n));
    let mut from_return: Vec<f64> = by_seq.iter().map(|(_, ms)| *ms).collect();
    from_return.sort_by(|a, b| a.total_cmp(b));
    from_call.sort_by(|a, b| a.total_cmp(b));
    let missing = n.saturating_sub(from_return.len());
    b.clear(ns).await?;
    b.s.purge(ns).await?;
    Ok(Pickups { from_return, from_call, first_tenth, last_tenth, missing })
}

/// The child process of the latency phase: a worker executor with the
/// storage's default poll settings (50 ms backing off to 1 s), so a pickup
/// within milliseconds comes from the notification, not a poll.
async fn worker(a: &Args, ns: &str) -> Res {
    let ns = Namespace::new(ns)?;
    let n = a.latency_tasks;
    let s = PostgresOptions::new().connect(&a.url).await?;
    let starts: Arc<Mutex<Vec<(u64, u64, u64)>>> = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let handler = Handler::new("stamp", {
        let starts = Arc::clone(&starts);
        move |(seq, sent): (u64, u64), _ctx: TaskContext| {
            let at = now_us();
            if let Ok(mut v) = starts.lock() {
                v.push((seq, sent, at));
            }
            async {}
        }
    });
    let executor =
        Executor::builder(s).namespace(ns.as_str()).concurrency(64).handler(handler).build().await?;
    let running = executor.start();
    println!("READY");
    // All due within n x 5 ms of the parent's start, plus slack.
    let give_up = Instant::now() + Duration::from_millis(5 * n as u64) + Duration::from_secs(60);
    while starts.lock().map(|v| v.len()).unwrap_or(n) < n && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running.shutdown().await?;
    let taken = starts.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
    for (seq, sent, at) in taken {
        println!("STARTED {seq} {sent} {at}");
    }
    Ok(())
}

async fn run(b: &Bench, a: &Args) -> Res {
    let s = &b.s;
    for ns in [&b.process, &b.backlog, &b.latency] {
        b.clear(ns).await?;
        s.purge(ns).await?;
    }
    sqlx::query("CREATE TABLE IF NOT EXISTS rex_pg_bench_ceiling (id INT PRIMARY KEY, n BIGINT NOT NULL)")
        .execute(&b.ceiling_pool)
        .await?;
    sqlx::query(
        "INSERT INTO rex_pg_bench_ceiling SELECT g, 0 FROM generate_series(1, 256) g ON CONFLICT DO NOTHING",
    )
    .execute(&b.ceiling_pool)
    .await?;
    let version: String =
        sqlx::query_scalar("SELECT current_setting('server_version')").fetch_one(s.pool()).await?;
    let commit: String =
        sqlx::query_scalar("SELECT current_setting('synchronous_commit')").fetch_one(s.pool()).await?;
    let autovacuum: String =
        sqlx::query_scalar("SELECT current_setting('autovacuum')").fetch_one(s.pool()).await?;
    println!(
        "server PostgreSQL {version} (synchronous_commit {commit}, autovacuum {autovacuum}); {} tasks per \
         processing run; {} connections; median of {} runs",
        a.tasks, a.connections, a.runs
    );
    if a.maintenance {
        println!(
            "maintenance: VACUUM (ANALYZE) before each run and the large backlog, ANALYZE after loading each \
             phase's tasks (--no-maintenance: none)"
        );
    }
    b.table_size("at the start").await?;
    let all = !a.only_latency && !a.only_backlog;
    if all {
        throughput(b, a).await?;
    }
    if all || a.only_latency {
        latency(b, a).await?;
    }
    if all || a.only_backlog {
        backlog(b, a).await?;
    }
    b.table_size("at the end").await?;
    Ok(())
}

/// The ceiling, submits and processing, `--runs` times.
async fn throughput(b: &Bench, a: &Args) -> Res {
    let (s, ns) = (&b.s, &b.process);
    let (mut ceiling, mut single, mut batched, mut c16, mut c64) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut ceiling_one, mut ceiling_pooled, mut ratios, mut batch_ratios) =
        (vec![], vec![], vec![], vec![]);
    for run in 0..a.runs {
        b.vacuum().await?;
        ceiling_one.push(update_ceiling(&b.ceiling_pool, 1, 2, true).await?);
        ceiling_pooled.push(update_ceiling(&b.ceiling_pool, a.connections, 3, false).await?);
        single.push(submit_single(s, ns, 2_000).await?);
        b.clear(ns).await?;
        batched.push(submit_batched(s, ns, a.tasks).await?);
        b.clear(ns).await?;
        c16.push(processing(b, ns, a.tasks, 16).await?);
        b.clear(ns).await?;
        // The ceiling right before and right after the run it is compared
        // with: other load on the machine moves both alike.
        let before = update_ceiling(&b.ceiling_pool, a.connections, 4, true).await?;
        c64.push(processing(b, ns, a.tasks, 64).await?);
        let after = update_ceiling(&b.ceiling_pool, a.connections, 4, true).await?;
        b.table_size(&format!("after {} tasks processed", a.tasks)).await?;
        b.clear(ns).await?;
        let alone = storage_only(b, ns, a.tasks, 4, 16).await?;
        b.clear(ns).await?;
        println!("  storage alone (4 claimers x 16, finishes concurrent): {alone:.0}/s");
        ceiling.push((before + after) / 2.0);
        ratios.push(c64[run] / ceiling[run]);
        batch_ratios.push(batched[run] / ceiling[run]);
        println!(
            "run {run}: ceiling {before:.0}/s before, {after:.0}/s after; submit {:.0}/s single, {:.0}/s batched \
             = {:.2} x ceiling; process {:.0}/s at 16, {:.0}/s at 64 = {:.2} x ceiling",
            single[run], batched[run], batch_ratios[run], c16[run], c64[run], ratios[run]
        );
    }
    let ceiling = median(ceiling);
    println!("ceiling: single-row autocommit UPDATE by PK, {} connections: {ceiling:.0}/s", a.connections);
    println!("ceiling: the same from one connection: {:.0}/s", median(ceiling_one));
    let pooled = median(ceiling_pooled);
    println!("ceiling: the same through the pool, connection taken per UPDATE: {pooled:.0}/s");
    println!("submit, one per call:       {:.0}/s", median(single));
    println!(
        "submit, batches of 500:     {:.0}/s; median of the per-run ratios to the ceiling: {:.2}",
        median(batched),
        median(batch_ratios)
    );
    println!("processing, concurrency 16: {:.0}/s", median(c16));
    println!(
        "processing, concurrency 64: {:.0}/s; median of the per-run ratios to the ceiling around it: {:.2}",
        median(c64),
        median(ratios)
    );
    Ok(())
}

/// The pickup latency across processes, `--runs` times.
async fn latency(b: &Bench, a: &Args) -> Res {
    let (mut p50, mut p90, mut p99, mut max, mut call50, mut call99) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for run in 0..a.runs {
        // The throughput phases leave dead row versions behind; autovacuum
        // (off on the CI server) would have removed them.
        b.vacuum().await?;
        let p = pickup_latency(b, a).await?;
        let r = &p.from_return;
        println!(
            "  run {run}: {} tasks at 200/s, submit's return->start p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, \
             max {:.2} ms, min {:.2} ms (p50 {:.2} ms over the first tenth, {:.2} ms over the last); submit's \
             call->start p50 {:.2} ms, p99 {:.2} ms; {} not started",
            r.len(),
            quantile(r, 0.5),
            quantile(r, 0.9),
            quantile(r, 0.99),
            quantile(r, 1.0),
            quantile(r, 0.0),
            p.first_tenth,
            p.last_tenth,
            quantile(&p.from_call, 0.5),
            quantile(&p.from_call, 0.99),
            p.missing
        );
        p50.push(quantile(r, 0.5));
        p90.push(quantile(r, 0.9));
        p99.push(quantile(r, 0.99));
        max.push(quantile(r, 1.0));
        call50.push(quantile(&p.from_call, 0.5));
        call99.push(quantile(&p.from_call, 0.99));
    }
    println!(
        "pickup, submit in this process, worker in another (LISTEN/NOTIFY), 200/s: from the submit's return \
         p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms; from its call p50 {:.2} ms, p99 {:.2} ms",
        median(p50),
        median(p90),
        median(p99),
        median(max),
        median(call50),
        median(call99)
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Res {
    let a = args()?;
    if let Some(ns) = &a.worker {
        return worker(&a, ns).await;
    }
    let b = Bench::connect(&a).await?;
    let outcome = tokio::select! {
        r = run(&b, &a) => r,
        r = tokio::signal::ctrl_c() => match r {
            Ok(()) => Err("interrupted".into()),
            Err(e) => Err(e.into()),
        },
    };
    let cleaned = b.clean().await;
    match (outcome, cleaned) {
        (Err(e), Err(c)) => {
            eprintln!("clean-up failed too: {c}");
            Err(e)
        }
        (outcome, cleaned) => outcome.and(cleaned),
    }
}
