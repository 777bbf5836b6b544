//! The controller role: starts the store and the workers, submits tasks at
//! a steady pace, injects faults for a bounded time, drains, then checks.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use executor_core::{Due, ListQuery, Namespace, NewTask, Storage, SubmitMode, TaskId, TaskState};

use crate::{
    check::{Final, check},
    fleet::{Fleet, drop_connections, restart_store},
    ledger::{Ledger, read_dir},
    process::TempDir,
    server::{AnyError, Backend, PrivateServer},
    store::ChaosStore,
    summary::print_summary,
    worker::{TASK_NAME, WorkerArgs},
};

/// A fault the controller injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    /// `kill -9` a worker, start a replacement.
    Kill,
    /// `SIGSTOP` a worker past its lease, then `SIGCONT`.
    Stop,
    /// Restart the private store (clean or `kill -9`, alternating).
    Restart,
    /// Kill the store's client connections.
    Drop,
}

/// Settings of a chaos run.
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    /// Store to use.
    #[arg(long, value_enum)]
    pub storage: Backend,
    /// Worker processes.
    #[arg(long, default_value_t = 3)]
    pub workers: usize,
    /// Tasks to submit (spread over 90 % of the run).
    #[arg(long, default_value_t = 3_000)]
    pub tasks: usize,
    /// How long faults are injected, in seconds.
    #[arg(long, default_value_t = 45)]
    pub seconds: u64,
    /// Attempts at once per worker.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Worker lease in ms (heartbeat a quarter of it).
    #[arg(long, default_value_t = 2_000)]
    pub lease_ms: u64,
    /// Mean time between faults, ms.
    #[arg(long, default_value_t = 3_000)]
    pub fault_every_ms: u64,
    /// Faults to inject.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "kill,stop,restart,drop")]
    pub faults: Vec<Fault>,
    /// Use this store instead of a private one (then no restarts or drops).
    #[arg(long)]
    pub url: Option<String>,
    /// Most time to wait for the last tasks after the faults stop, seconds.
    #[arg(long, default_value_t = 120)]
    pub drain_seconds: u64,
}

/// Runs the controller; returns whether every invariant held.
///
/// # Errors
/// Setup failed (store, processes); invariant violations are not errors.
pub fn run(args: RunArgs) -> Result<bool, AnyError> {
    let mut dir = TempDir::new("chaos-run")?;
    let server = match &args.url {
        Some(_) => None,
        None => Some(PrivateServer::start(args.storage)?),
    };
    let url = args.url.clone().or_else(|| server.as_ref().map(PrivateServer::url)).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let ok = match args.storage {
        Backend::Redis => rt.block_on(drive::<executor_redis::RedisStorage>(&args, &url, server, &dir))?,
        Backend::Mysql => rt.block_on(drive::<executor_mysql::MySqlStorage>(&args, &url, server, &dir))?,
    };
    if !ok {
        dir.keep();
        eprintln!("ledgers and logs kept in {}", dir.path().display());
    }
    Ok(ok)
}

async fn drive<S: ChaosStore>(
    args: &RunArgs,
    url: &str,
    server: Option<PrivateServer>,
    dir: &TempDir,
) -> Result<bool, AnyError> {
    let ns = Namespace::new(format!("chaos-{}-{:06x}", std::process::id(), rand::random::<u32>() >> 8))?;
    let storage = S::connect_retrying(url, Duration::from_secs(30)).await?;
    let template = WorkerArgs {
        storage: args.storage,
        url: url.to_owned(),
        ns: ns.as_str().to_owned(),
        ledger: dir.path().join("unused.log"),
        lease_ms: args.lease_ms,
        concurrency: args.concurrency,
        min_ms: 5,
        max_ms: 100,
        block_ms: 0,
        current_thread: false,
    };
    let ledger = Ledger::open(&dir.path().join("controller.log"))?;
    let fleet = Arc::new(Mutex::new(Fleet::new(template, dir.path().to_path_buf(), ledger)));
    for _ in 0..args.workers.max(1) {
        lock(&fleet).spawn(&[])?;
    }
    let started = Instant::now();
    let run_for = Duration::from_secs(args.seconds);
    let ids: Vec<String> = (0..args.tasks).map(|i| format!("t{i:07}")).collect();

    let injector = {
        let fleet = Arc::clone(&fleet);
        let args = args.clone();
        let server = server.map(|s| Arc::new(Mutex::new(s)));
        let keep = server.clone();
        (std::thread::spawn(move || inject(&fleet, server.as_ref(), &args, started + run_for)), keep)
    };

    let submit_errors = submit_paced(&storage, &ns, &ids, started, run_for.mul_f64(0.9)).await;
    let (handle, server) = injector;
    let faults = handle.join().map_err(|_| "fault injector panicked")?;
    if let Err(e) = faults {
        eprintln!("fault injection stopped early: {e}");
    }

    let fault_end = Instant::now();
    let drained = drain(&storage, &ns, args.tasks, Duration::from_secs(args.drain_seconds), &fleet).await;
    let drain_time = fault_end.elapsed();
    lock(&fleet).stop_all(Duration::from_secs(10));

    let finals = read_finals(&storage, &ns).await?;
    let (events, torn) = read_dir(dir.path())?;
    let mut report = check(&events, &ids, &finals, args.lease_ms);
    if !drained {
        report.violations.push(format!("tasks still not terminal {:?} after the faults stopped", drain_time));
    }
    if torn > 0 {
        report.violations.push(format!("{torn} ledger lines did not parse"));
    }
    let counts = storage.counts(&ns).await?;
    if counts.total() != args.tasks as u64 {
        report.violations.push(format!("counts add up to {}, {} were submitted", counts.total(), args.tasks));
    }
    let restarts = server.as_ref().map_or(0, |s| lock(s).restarts());
    print_summary(args, &report, started.elapsed(), drain_time, submit_errors, restarts);
    if let Err(e) = storage.purge(&ns).await {
        eprintln!("purging namespace {ns} failed: {e}");
    }
    Ok(report.violations.is_empty())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fault loop, on its own thread: bounded by `until` and by count.
fn inject(
    fleet: &Mutex<Fleet>,
    server: Option<&Arc<Mutex<PrivateServer>>>,
    args: &RunArgs,
    until: Instant,
) -> Result<(), AnyError> {
    let every = Duration::from_millis(args.fault_every_ms.max(100));
    let max_faults = args.seconds * 1000 / every.as_millis().max(1) as u64 + 1;
    let lease = Duration::from_millis(args.lease_ms);
    let mut crash = false;
    let enabled: Vec<Fault> = args
        .faults
        .iter()
        .copied()
        .filter(|f| server.is_some() || matches!(f, Fault::Kill | Fault::Stop))
        .collect();
    // Round robin over a shuffled order, so every kind of fault happens.
    let offset = rand::random_range(0..enabled.len().max(1));
    for n in 0..max_faults {
        let jitter = every.mul_f64(rand::random_range(0.5..1.5));
        if Instant::now() + jitter >= until {
            break;
        }
        std::thread::sleep(jitter);
        let Some(&fault) = enabled.get((n as usize + offset) % enabled.len().max(1)) else { break };
        let done = match (fault, server) {
            (Fault::Kill, _) => lock(fleet).kill_one(),
            (Fault::Stop, _) => {
                lock(fleet).pause_one(lease + lease / 2 + Duration::from_millis(1_000));
                Ok(())
            }
            (Fault::Restart, Some(s)) => {
                crash = !crash;
                restart_store(&lock(fleet), &mut lock(s), crash, Duration::from_millis(1_000))
            }
            (Fault::Drop, Some(s)) => {
                let port = lock(s).port();
                drop_connections(&lock(fleet), args.storage, port)
            }
            _ => Ok(()),
        };
        // One failed injection (e.g. the binary was replaced on disk) must
        // not end the run's faults: report it and go on.
        if let Err(e) = done {
            eprintln!("fault {fault:?} failed: {e}");
            lock(fleet).note("fault_error", None, format!("{fault:?}: {e}"));
        }
    }
    Ok(())
}

/// Submits `ids` in batches spread evenly over `spread`; a batch that fails
/// (store down) is retried until it is in, idempotently. Returns the number
/// of failed submit calls and the first error text.
async fn submit_paced<S: Storage>(
    storage: &S,
    ns: &Namespace,
    ids: &[String],
    started: Instant,
    spread: Duration,
) -> (usize, Option<String>) {
    const BATCH: usize = 50;
    let batches = ids.len().div_ceil(BATCH).max(1);
    let mut errors = 0;
    let mut first = None;
    let give_up = started + spread + Duration::from_secs(120);
    for (n, chunk) in ids.chunks(BATCH).enumerate() {
        let at = started + spread.mul_f64(n as f64 / batches as f64);
        tokio::time::sleep_until(at.into()).await;
        let mut left: Vec<&String> = chunk.iter().collect();
        while !left.is_empty() && Instant::now() < give_up {
            let tasks: Vec<NewTask> = left.iter().filter_map(|id| new_task(id)).collect();
            match storage.submit_many(ns, tasks).await {
                Ok(results) => {
                    let mut retry = Vec::new();
                    for (id, r) in left.iter().zip(results) {
                        if let Err(e) = r {
                            errors += 1;
                            first.get_or_insert_with(|| e.to_string());
                            retry.push(*id);
                        }
                    }
                    left = retry;
                }
                Err(e) => {
                    errors += 1;
                    first.get_or_insert_with(|| e.to_string());
                }
            }
            if !left.is_empty() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    (errors, first)
}

fn new_task(id: &str) -> Option<NewTask> {
    let index: u64 = id.trim_start_matches('t').parse().ok()?;
    Some(NewTask {
        id: TaskId::new(id).ok()?,
        name: TASK_NAME.to_owned(),
        payload: index.to_string().into_bytes(),
        due: Due::Now,
        // Faults never exhaust the attempts: every re-run must come from a fault.
        max_attempts: 10_001,
        max_duration: None,
        timeout: None,
        retry: None,
        mode: SubmitMode::Idempotent,
    })
}

/// Waits until every task is terminal; keeps the fleet at strength.
async fn drain<S: Storage>(
    storage: &S,
    ns: &Namespace,
    tasks: usize,
    limit: Duration,
    fleet: &Mutex<Fleet>,
) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Ok(c) = storage.counts(ns).await {
            let waiting = [TaskState::Created, TaskState::Pending, TaskState::Running]
                .iter()
                .map(|s| c.get(*s))
                .sum::<u64>();
            if waiting == 0 && c.total() >= tasks as u64 {
                return true;
            }
        }
        {
            let mut f = lock(fleet);
            if f.pids().is_empty() {
                let _ = f.spawn(&[]);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

async fn read_finals<S: Storage>(storage: &S, ns: &Namespace) -> Result<HashMap<String, Final>, AnyError> {
    let mut out = HashMap::new();
    for state in TaskState::ALL {
        let mut query = ListQuery::new(state, 1_000);
        loop {
            let page = storage.list(ns, query.clone()).await?;
            for t in page.tasks {
                out.insert(t.id.as_str().to_owned(), Final { state: t.state.to_string(), fence: t.fence });
            }
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => break,
            }
        }
    }
    Ok(out)
}
