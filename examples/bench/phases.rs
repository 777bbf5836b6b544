//! The measurements, each on its own namespace, one after another.

use std::{
    process::Command,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use executor_core::{
    Client, Executor, ExecutorBuilder, Handler, Namespace, QueueName, Submit, TaskContext, TaskId, Timestamp,
    queue::{QueueLimits, RateLimit},
    storage::{Due, NewTask},
};

use executor_redis::RedisStorage;

use crate::{Args, Phase, backend::Backend, stats};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A no-op task (payload `null`, one attempt), under an id generated for
/// it, as the builder submits one without `.id(..)`.
pub(crate) fn noop(name: &str, payload: Vec<u8>, due: Due) -> NewTask {
    let mut task = NewTask::with_generated_id(name, payload);
    task.due = due;
    task.max_attempts = 1;
    task
}

pub(crate) fn namespace(what: &str) -> Res<Namespace> {
    let id = TaskId::generate();
    Ok(Namespace::new(format!("bench-{what}-{}", &id.as_str()[24..]))?)
}

/// Submits `n` no-op tasks with `submit_many` from 4 concurrent producers
/// (so the client's encoding overlaps the server's work); the time it took.
pub(crate) async fn preload<S: Backend>(
    storage: &S,
    ns: &Namespace,
    n: usize,
    batch: usize,
) -> Res<Duration> {
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut producers = Vec::new();
    for _ in 0..4 {
        let (storage, ns, next) = (storage.clone(), ns.clone(), Arc::clone(&next));
        producers.push(tokio::spawn(async move {
            loop {
                let from = next.fetch_add(batch, Ordering::Relaxed);
                if from >= n {
                    return Ok::<_, executor_core::Error>(());
                }
                let k = batch.min(n - from);
                let tasks = (0..k)
                    .map(|j| {
                        let mut t = noop("noop", b"null".to_vec(), Due::Now);
                        if let Some(q) = queue_of(from + j) {
                            t.queue = q;
                        }
                        t
                    })
                    .collect();
                for r in storage.submit_many(&ns, tasks).await? {
                    r?;
                }
            }
        }));
    }
    for p in producers {
        p.await??;
    }
    Ok(started.elapsed())
}

/// `--queues`, `--limit-concurrency`, `--limit-rate`, set once by `main`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Flow {
    pub(crate) queues: usize,
    pub(crate) concurrency: Option<u32>,
    pub(crate) rate: Option<u32>,
}

pub(crate) static FLOW: std::sync::OnceLock<Flow> = std::sync::OnceLock::new();

fn flow() -> Flow {
    FLOW.get().copied().unwrap_or_default()
}

/// The queue of the `i`th pre-loaded task: round robin over `--queues`.
fn queue_of(i: usize) -> Option<QueueName> {
    let n = flow().queues;
    (n > 0).then(|| QueueName::new(format!("q{}", i % n)).unwrap_or_default())
}

/// Sets the `--limit-*` limits on every `--queues` queue; a label for the
/// report line.
pub(crate) async fn apply_limits<S: Backend>(storage: &S, ns: &Namespace) -> Res<String> {
    let f = flow();
    if f.queues == 0 {
        return Ok(String::new());
    }
    let mut limits = QueueLimits::new();
    if let Some(c) = f.concurrency {
        limits = limits.concurrency(c);
    }
    if let Some(r) = f.rate {
        limits = limits.rate(RateLimit::per_second(r)?);
    }
    if !limits.is_none() {
        for i in 0..f.queues {
            storage.set_queue_limits(ns, &QueueName::new(format!("q{i}"))?, &limits).await?;
        }
    }
    let mut label = format!(", {} weighted queues", f.queues);
    if let Some(c) = f.concurrency {
        label.push_str(&format!(", concurrency limit {c} each"));
    }
    if let Some(r) = f.rate {
        label.push_str(&format!(", rate limit {r}/s each"));
    }
    Ok(label)
}

/// `--claim-batch`, set once by `main`.
pub(crate) static CLAIM_BATCH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// An executor builder with the benchmark's settings.
pub(crate) fn builder<S: Backend>(storage: S) -> ExecutorBuilder<S> {
    let n = flow().queues;
    let mut b = Executor::builder(storage);
    if n > 0 {
        b = b.queues((0..n).map(|i| (format!("q{i}"), u32::try_from(n - i).unwrap_or(1))));
    }
    match CLAIM_BATCH.get() {
        Some(&n) => b.claim_batch(n),
        None => b,
    }
}

/// An executor of no-op tasks that counts the attempts it starts.
///
/// The benchmark's handlers are closures given with `.handler(..)`, not
/// `#[reliable_task]` functions taking `Data<T>`: every `#[reliable_task]` in
/// a binary is registered in every executor the binary builds, and each
/// phase builds its own executor around its own handler and counters
/// (`noop`, `latency`, `lateness` with different payloads). A closure keeps
/// each executor to the one handler its phase measures.
pub(crate) async fn counting_executor<S: Backend>(
    storage: S,
    ns: &Namespace,
    concurrency: usize,
    started: Arc<AtomicUsize>,
) -> Res<Executor<S>> {
    let handler = Handler::new("noop", move |_: (), _ctx: TaskContext| {
        let started = Arc::clone(&started);
        async move {
            started.fetch_add(1, Ordering::Relaxed);
        }
    });
    Ok(builder(storage).namespace(ns.as_str()).concurrency(concurrency).handler(handler).build().await?)
}

/// Polls until `counter` reaches `n`; the time from `since`.
pub(crate) async fn wait_count(
    counter: &AtomicUsize,
    n: usize,
    since: Instant,
    limit: Duration,
) -> Res<Duration> {
    while counter.load(Ordering::Relaxed) < n {
        if since.elapsed() > limit {
            return Err(format!(
                "only {} of {n} tasks ran within {limit:?}",
                counter.load(Ordering::Relaxed)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(since.elapsed())
}

/// Processes `n` of the namespace's pre-loaded tasks at `concurrency`;
/// tasks/s, the Redis server's CPU time per task in µs, and this process's.
async fn process<S: Backend>(
    storage: &S,
    ns: &Namespace,
    concurrency: usize,
    n: usize,
) -> Res<(f64, Option<f64>, Option<f64>)> {
    let cpu_before = storage.server_cpu().await;
    let own_before = stats::process_cpu_secs();
    let started = Arc::new(AtomicUsize::new(0));
    let executor = counting_executor(storage.clone(), ns, concurrency, Arc::clone(&started)).await?;
    let t0 = Instant::now();
    let running = executor.start();
    let took = wait_count(&started, n, t0, Duration::from_secs(600)).await?;
    running.shutdown().await?;
    let per_task = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(b), Some(a)) => Some((a - b) * 1e6 / n as f64),
        _ => None,
    };
    let own = per_task(own_before, stats::process_cpu_secs());
    let cpu = per_task(cpu_before, storage.server_cpu().await);
    Ok((stats::rate(n, took), cpu, own))
}

fn redis_benchmark(url: &str) -> Res<(f64, f64)> {
    let rest = url.split("://").nth(1).unwrap_or("127.0.0.1:6379");
    let hostport = rest.rsplit('@').next().unwrap_or(rest).split('/').next().unwrap_or(rest);
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, "6379"));
    let out = Command::new("redis-benchmark")
        .args(["-h", host, "-p", port, "-q", "-t", "set,zadd", "-n", "200000"])
        .output()
        .map_err(|e| format!("redis-benchmark: {e} (install redis-tools)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let find = |name: &str| -> Res<f64> {
        let line = text
            .split(['\r', '\n'])
            .rfind(|l| l.starts_with(name) && l.contains("requests per second"))
            .ok_or_else(|| format!("no {name} line in redis-benchmark output: {text}"))?;
        let figure = line.split(':').nth(1).and_then(|s| s.split_whitespace().next()).unwrap_or("");
        Ok(figure.parse()?)
    };
    Ok((find("SET")?, find("ZADD")?))
}

fn server_time(cpu: Option<f64>, per_command: Option<f64>) -> String {
    match (cpu, per_command) {
        (Some(c), Some(p)) => format!("; Redis CPU {c:.1} us/task = {:.1} plain commands", c / p),
        (Some(c), None) => format!("; Redis CPU {c:.1} us/task"),
        _ => String::new(),
    }
}

/// Prints where the Redis server's time per task went since `before`
/// (`INFO commandstats`); nothing for another store.
async fn server_commands<S: Backend>(
    what: &str,
    storage: &S,
    before: Option<crate::backend::CommandStats>,
    n: usize,
) {
    if let (Some(before), Some(after)) = (before, crate::backend::command_stats(storage).await) {
        println!("{what}, Redis per task: {}", crate::backend::per_task_commands(&before, &after, n));
    }
}

fn ratio(rate: f64, ceiling: Option<f64>) -> String {
    ceiling.map(|c| format!(" = {:.2} x SET", rate / c)).unwrap_or_default()
}

/// Runs every selected phase and prints one line per figure.
pub(crate) async fn run_all<S: Backend>(storage: S, args: &Args) -> Res<()> {
    let mut figures = crate::plot::Figures { latency_rate: args.rate, ..Default::default() };
    let mut set_rps = None;
    let mut set_cpu = None;
    if args.runs(Phase::Ceiling) && storage.redis().is_some() {
        let before = storage.server_cpu().await;
        let (set, zadd) = redis_benchmark(&args.redis_url)?;
        let after = storage.server_cpu().await;
        if let Some(redis) = storage.redis() {
            // redis-benchmark's own keys: leave the server as found.
            let keys = vec!["key:__rand_int__", "myzset"];
            let dropped: Result<i64, _> =
                fred::interfaces::KeysInterface::del(redis.pool().next(), keys).await;
            if let Err(e) = dropped {
                eprintln!("could not delete redis-benchmark's keys: {e}");
            }
        }
        println!(
            "ceiling   redis-benchmark -q -t set,zadd -n 200000: SET {set:.0} req/s, ZADD {zadd:.0} req/s"
        );
        if let (Some(b), Some(a)) = (before, after) {
            let per = (a - b) * 1e6 / 400_000.0;
            println!("ceiling   Redis CPU per plain command (SET/ZADD): {per:.1} us");
            set_cpu = Some(per);
        }
        set_rps = Some(set);
    }
    if args.runs(Phase::Submit) {
        let ns = namespace("submit")?;
        let client = Client::without_name_check(storage.clone(), ns.clone());
        let next = Arc::new(AtomicUsize::new(0));
        let commands_before = crate::backend::command_stats(&storage).await;
        let t0 = Instant::now();
        let mut producers = Vec::new();
        for _ in 0..args.submitters {
            let (client, next, n) = (client.clone(), Arc::clone(&next), args.single_submits);
            producers.push(tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    client.submit_new(noop("noop", b"null".to_vec(), Due::Now)).await?;
                }
                Ok::<_, executor_core::Error>(())
            }));
        }
        for p in producers {
            p.await??;
        }
        let single = stats::rate(args.single_submits, t0.elapsed());
        println!(
            "submit    single, {} producers: {single:.0} tasks/s{}",
            args.submitters,
            ratio(single, set_rps)
        );
        server_commands("submit    single", &storage, commands_before, args.single_submits).await;
        storage.drop_namespace(&ns).await;
        let commands_before = crate::backend::command_stats(&storage).await;
        let took = preload(&storage, &ns, args.batched_submits, args.batch_size).await?;
        let batched = stats::rate(args.batched_submits, took);
        println!(
            "submit    submit_many of {}, 4 producers: {batched:.0} tasks/s{}",
            args.batch_size,
            ratio(batched, set_rps)
        );
        server_commands("submit    submit_many", &storage, commands_before, args.batched_submits).await;
        storage.drop_namespace(&ns).await;
    }
    if args.runs(Phase::Lone) {
        lone(&storage, args).await?;
    }
    if args.runs(Phase::Process) {
        for &c in &args.concurrency {
            let n = if c == 1 { args.backlog.min(args.backlog_c1) } else { args.backlog };
            let ns = namespace(&format!("c{c}"))?;
            preload(&storage, &ns, n, args.batch_size).await?;
            let flow = apply_limits(&storage, &ns).await?;
            let commands_before = crate::backend::command_stats(&storage).await;
            let (r, cpu, own) = process(&storage, &ns, c, n).await?;
            figures.processing.push((c, r));
            let own = own.map(|o| format!("; bench process CPU {o:.1} us/task")).unwrap_or_default();
            println!(
                "process   backlog {n}, concurrency {c}{flow}: {r:.0} tasks/s{}{}{own}",
                ratio(r, set_rps),
                server_time(cpu, set_cpu)
            );
            server_commands(&format!("process   concurrency {c}"), &storage, commands_before, n).await;
            storage.drop_namespace(&ns).await;
        }
    }
    if args.runs(Phase::Latency) {
        figures.latency_ms = latency(&storage, args).await?;
    }
    if args.runs(Phase::Lateness) {
        lateness(&storage, args).await?;
    }
    if args.runs(Phase::Backlog) {
        figures.backlog = backlog(&storage, args).await?;
    }
    if args.runs(Phase::Rss) {
        crate::worker::rss(&storage, args, set_rps).await?;
    }
    if args.runs(Phase::Limited) {
        crate::limited::run(&storage, args).await?;
    }
    if let Some(dir) = &args.plot {
        figures.ceiling = set_rps;
        let store = format!("{:?}", args.storage).to_lowercase();
        for file in crate::plot::write(dir, &store, &figures)? {
            println!("plot      {file}");
        }
    }
    Ok(())
}

/// One submit at a time from one producer, as a web handler awaits one per
/// request: its latency beside a raw round trip of the store (Redis:
/// `EVALSHA` of `return 1`; MySQL: `DO 1`), the two alternating so that both
/// see the same machine.
async fn lone<S: Backend>(storage: &S, args: &Args) -> Res<()> {
    let ns = namespace("lone")?;
    let client = Client::without_name_check(storage.clone(), ns.clone());
    let n = args.lone_submits;
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for _ in 0..n.min(200) {
        client.submit_new(noop("noop", b"null".to_vec(), Due::Now)).await?;
        storage.raw_call().await;
    }
    let (mut submits, mut raws) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut submitting = Duration::ZERO;
    for _ in 0..n {
        let t = Instant::now();
        client.submit_new(noop("noop", b"null".to_vec(), Due::Now)).await?;
        submitting += t.elapsed();
        submits.push(ms(t));
        let t = Instant::now();
        if storage.raw_call().await.is_some() {
            raws.push(ms(t));
        }
    }
    let (_, p50, p99, _) = stats::summary(submits);
    let rate = stats::rate(n, submitting);
    print!("lone      one submit at a time ({n}): p50 {p50:.3} ms, p99 {p99:.3} ms, {rate:.0} submits/s");
    if raws.is_empty() {
        println!();
    } else {
        let raw = if storage.redis().is_some() { "EVALSHA `return 1`" } else { "`DO 1`" };
        let (_, r50, r99, _) = stats::summary(raws);
        println!(
            "; raw {raw}: p50 {r50:.3} ms, p99 {r99:.3} ms; submit/raw p50 {:.2}x, p99 {:.2}x",
            p50 / r50,
            p99 / r99
        );
    }
    storage.drop_namespace(&ns).await;
    if let Some(redis) = storage.redis() {
        lone_breakdown(redis, n).await?;
    }
    Ok(())
}

/// Where a lone Redis submit's time goes, each step alternating with the
/// others so all see the same machine: the raw `EVALSHA` of `return 1`;
/// a script that does nothing but answer what `submit_one.lua` answers,
/// called with its keys and arguments (the transport's share of a submit:
/// the larger request and reply); `submit_one.lua` called straight through
/// fred with the arguments ready (adds the script's work on the server);
/// the storage's `submit` (adds the driver: checks, encoding, group
/// commit); and the `Client` (adds the core: building and validating the
/// task).
async fn lone_breakdown(redis: &RedisStorage, n: usize) -> Res<()> {
    use executor_core::storage::Storage;
    use fred::interfaces::{KeysInterface, LuaInterface};
    let ns = namespace("lone-parts")?;
    let client = Client::without_name_check(redis.clone(), ns.clone());
    let conn = redis.pool().next();
    let sha: String = conn.script_load(include_str!("../../executor-redis/lua/submit_one.lua")).await?;
    let trivial: String = conn.script_load("return 1").await?;
    let echo: String = conn.script_load("return 1764633600000").await?;
    let base = format!("{{rex-bench-{}}}:", &TaskId::generate().as_str()[24..]);
    let keys = vec![format!("{base}due"), format!("{base}wake")];
    let mut written = Vec::new();
    let mut script = |sha: &str, write: bool| {
        let id = TaskId::generate().as_str().to_owned();
        if write {
            written.push(format!("{base}t:{id}"));
        }
        // The key base and the other values joined by newlines, then the
        // payload.
        let nonce = TaskId::generate();
        let values =
            [base.as_str(), id.as_str(), "noop", "n", "0", "1", "", "", "", "p", nonce.as_str(), "", ""];
        let args = vec![values.join("\n"), "null".to_owned()];
        conn.evalsha::<fred::types::Value, _, _, _>(sha.to_owned(), keys.clone(), args)
    };
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let mut parts: [Vec<f64>; 5] = Default::default();
    for i in 0..n + n.min(200) {
        let t = Instant::now();
        let _: i64 = conn.evalsha(trivial.as_str(), (), ()).await?;
        let raw = ms(t);
        let t = Instant::now();
        script(&echo, false).await?;
        let shaped = ms(t);
        let t = Instant::now();
        script(&sha, true).await?;
        let direct = ms(t);
        let t = Instant::now();
        redis.submit(&ns, noop("noop", b"null".to_vec(), Due::Now)).await?;
        let stored = ms(t);
        let t = Instant::now();
        client.submit_new(noop("noop", b"null".to_vec(), Due::Now)).await?;
        let full = ms(t);
        if i >= n.min(200) {
            for (part, v) in parts.iter_mut().zip([raw, shaped, direct, stored, full]) {
                part.push(v);
            }
        }
    }
    let names = [
        "raw EVALSHA `return 1`",
        "its reply, its arguments",
        "submit_one.lua via fred",
        "RedisStorage::submit",
        "Client::submit_new",
    ];
    for (name, values) in names.iter().zip(parts) {
        let (_, p50, p99, _) = stats::summary(values);
        println!("lone part {name:<24} p50 {p50:.3} ms, p99 {p99:.3} ms");
    }
    for chunk in written.chunks(500).map(<[String]>::to_vec).chain([keys, vec![format!("{base}counts")]]) {
        let _: i64 = conn.del(chunk).await?;
    }
    Backend::drop_namespace(redis, &ns).await;
    Ok(())
}

/// Due→start latency on an idle executor at a steady submit rate.
async fn latency<S: Backend>(storage: &S, args: &Args) -> Res<Vec<f64>> {
    let ns = namespace("latency")?;
    let n = usize::try_from(args.rate * args.latency_secs)?;
    let sent: Arc<Vec<Mutex<Option<Instant>>>> = Arc::new((0..n).map(|_| Mutex::new(None)).collect());
    let waits = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let handler = Handler::new("latency", {
        let (sent, waits) = (Arc::clone(&sent), Arc::clone(&waits));
        move |seq: usize, _ctx: TaskContext| {
            let now = Instant::now();
            let at = sent.get(seq).and_then(|m| *m.lock().unwrap_or_else(|e| e.into_inner()));
            if let Some(at) = at {
                waits
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(now.duration_since(at).as_secs_f64() * 1e3);
            }
            async {}
        }
    });
    let executor =
        builder(storage.clone()).namespace(ns.as_str()).concurrency(64).handler(handler).build().await?;
    let running = executor.start();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / args.rate.max(1)));
    for seq in 0..n {
        tick.tick().await;
        *sent[seq].lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        executor.submit_new(noop("latency", seq.to_string().into_bytes(), Due::Now)).await?;
    }
    let t0 = Instant::now();
    while waits.lock().unwrap_or_else(|e| e.into_inner()).len() < n && t0.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    running.shutdown().await?;
    let values = std::mem::take(&mut *waits.lock().unwrap_or_else(|e| e.into_inner()));
    let got = values.len();
    let (_, p50, p99, max) = stats::summary(values.clone());
    println!(
        "latency   submit->start at {}/s for {}s ({got} tasks): p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        args.rate, args.latency_secs
    );
    storage.drop_namespace(&ns).await;
    Ok(values)
}

fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Lateness of a burst of tasks all due at the same millisecond.
async fn lateness<S: Backend>(storage: &S, args: &Args) -> Res<()> {
    let ns = namespace("lateness")?;
    let late = Arc::new(Mutex::new(Vec::with_capacity(args.simultaneous)));
    let due_ms = (now_us() / 1000 + 1500) as u64;
    let handler = Handler::new("lateness", {
        let late = Arc::clone(&late);
        move |due: u64, _ctx: TaskContext| {
            let us = now_us() - (due as i64) * 1000;
            late.lock().unwrap_or_else(|e| e.into_inner()).push(us as f64 / 1e3);
            async {}
        }
    });
    let executor = builder(storage.clone())
        .namespace(ns.as_str())
        .concurrency(args.lateness_concurrency)
        .handler(handler)
        .build()
        .await?;
    let running = executor.start();
    let tasks = (0..args.simultaneous)
        .map(|_| noop("lateness", due_ms.to_string().into_bytes(), Due::At(Timestamp::from_millis(due_ms))))
        .collect();
    for r in storage.submit_many(&ns, tasks).await? {
        r?;
    }
    let t0 = Instant::now();
    while late.lock().unwrap_or_else(|e| e.into_inner()).len() < args.simultaneous
        && t0.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    running.shutdown().await?;
    let values = std::mem::take(&mut *late.lock().unwrap_or_else(|e| e.into_inner()));
    let early = values.iter().filter(|v| **v < 0.0).count();
    let got = values.len();
    let (min, p50, p99, max) = stats::summary(values);
    println!(
        "lateness  {got} of {} due at one instant, concurrency {}: early {early}, min {min:.2} ms, p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        args.simultaneous, args.lateness_concurrency
    );
    storage.drop_namespace(&ns).await;
    Ok(())
}

/// Processing rate with a large backlog vs a small one (and the sizes of
/// `--backlog-steps` between them); memory per task. Returns (queued, rate)
/// per size.
async fn backlog<S: Backend>(storage: &S, args: &Args) -> Res<Vec<(usize, f64)>> {
    let ns = namespace("small")?;
    preload(storage, &ns, args.small_backlog, args.batch_size).await?;
    let (small, _, _) = process(storage, &ns, 64, args.small_backlog).await?;
    storage.drop_namespace(&ns).await;
    let mut points = vec![(args.small_backlog, small)];
    for &size in args.backlog_steps.iter().filter(|n| **n > args.small_backlog && **n < args.big_backlog) {
        let ns = namespace(&format!("step{size}"))?;
        preload(storage, &ns, size, args.batch_size).await?;
        let sample = args.big_sample.min(size);
        let (rate, _, _) = process(storage, &ns, 64, sample).await?;
        println!("backlog   concurrency 64 with {size} queued (first {sample}): {rate:.0} tasks/s");
        points.push((size, rate));
        storage.drop_namespace(&ns).await;
    }

    let ns = namespace("big")?;
    let before = storage.used_memory().await;
    let took = preload(storage, &ns, args.big_backlog, args.batch_size).await?;
    let after = storage.used_memory().await;
    println!(
        "backlog   pre-loaded {} tasks in {:.1} s ({:.0} tasks/s)",
        args.big_backlog,
        took.as_secs_f64(),
        stats::rate(args.big_backlog, took)
    );
    if let (Some(b), Some(a)) = (before, after) {
        let per_task = (a as f64 - b as f64) / args.big_backlog as f64;
        println!(
            "memory    Redis used_memory per queued task: {per_task:.0} bytes (payload `null`, 4 bytes; {:.0} bytes beyond it)",
            per_task - 4.0
        );
    }
    let sample = args.big_sample.min(args.big_backlog);
    let (big, _, _) = process(storage, &ns, 64, sample).await?;
    println!(
        "backlog   concurrency 64: {small:.0} tasks/s with {} queued, {big:.0} tasks/s with {} queued (first {sample}): {:.0} %",
        args.small_backlog,
        args.big_backlog,
        big / small * 100.0
    );
    points.push((args.big_backlog, big));
    storage.drop_namespace(&ns).await;
    Ok(points)
}
