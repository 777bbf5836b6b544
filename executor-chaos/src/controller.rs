//! The controller role: starts the store and the workers, submits tasks at
//! a steady pace, injects faults for a bounded time, drains, then checks.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use executor_core::{Due, Namespace, NewTask, Storage, SubmitMode, TaskId, TaskState};

use crate::{
    check::{Final, check, check_demoted, check_due},
    fleet::{Fleet, backend_name, drop_connections, restart_store},
    ledger::{Ledger, now_ms, read_dir},
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
    /// Use this store instead of a private one (then no restarts or drops);
    /// for `tiered`, the hot tier (Redis).
    #[arg(long)]
    pub url: Option<String>,
    /// With `--url` and `tiered`: the cold tier (MariaDB).
    #[arg(long)]
    pub cold_url: Option<String>,
    /// Percent of the tasks submitted with a delay past the horizon of a
    /// `tiered` store (so they go cold and are promoted during the run);
    /// other backends submit every task due now.
    #[arg(long, default_value_t = 30)]
    pub far_percent: u8,
    /// Percent of the tasks (picked by `worker::retries_far` from their
    /// index) whose first attempt asks for a retry 4-6 s later, past a
    /// `tiered` store's horizon, so the retry is moved from the hot tier to
    /// the cold one and promoted back under faults. 0: none.
    #[arg(long, default_value_t = 0)]
    pub retry_percent: u8,
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
    // One server per tier, hot first.
    let servers = match &args.url {
        Some(_) => Vec::new(),
        None => args.storage.servers().iter().map(|b| PrivateServer::start(*b)).collect::<Result<_, _>>()?,
    };
    let url = args.url.clone().or_else(|| servers.first().map(PrivateServer::url)).unwrap_or_default();
    let cold_url = args.cold_url.clone().or_else(|| servers.get(1).map(PrivateServer::url));
    let stores = Stores { url, cold_url, servers };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let ok = match args.storage {
        Backend::Redis => rt.block_on(drive::<executor_redis::RedisStorage>(&args, stores, &dir))?,
        Backend::Mysql => rt.block_on(drive::<executor_mysql::MySqlStorage>(&args, stores, &dir))?,
        Backend::Tiered => rt.block_on(drive::<crate::tiered::Tiered>(&args, stores, &dir))?,
    };
    if !ok {
        dir.keep();
        eprintln!("ledgers and logs kept in {}", dir.path().display());
    }
    Ok(ok)
}

/// Where a run's store lives: its URLs and the private servers behind them.
#[derive(Debug)]
struct Stores {
    url: String,
    cold_url: Option<String>,
    servers: Vec<PrivateServer>,
}

async fn drive<S: ChaosStore>(args: &RunArgs, stores: Stores, dir: &TempDir) -> Result<bool, AnyError> {
    let ns = Namespace::new(format!("chaos-{}-{:06x}", std::process::id(), rand::random::<u32>() >> 8))?;
    let Stores { url, cold_url, servers } = stores;
    let storage = S::connect_run(&url, cold_url.as_deref(), Duration::from_secs(30)).await?;
    let template = WorkerArgs {
        storage: args.storage,
        url: url.clone(),
        cold_url,
        ns: ns.as_str().to_owned(),
        ledger: dir.path().join("unused.log"),
        lease_ms: args.lease_ms,
        concurrency: args.concurrency,
        min_ms: 5,
        max_ms: 100,
        block_ms: 0,
        current_thread: false,
        retry_percent: args.retry_percent,
    };
    let ledger = Ledger::open(&dir.path().join("controller.log"))?;
    let fleet = Arc::new(Mutex::new(Fleet::new(template, dir.path().to_path_buf(), ledger)));
    for _ in 0..args.workers.max(1) {
        lock(&fleet).spawn(&[])?;
    }
    let started = Instant::now();
    let run_for = Duration::from_secs(args.seconds);
    let ids: Vec<String> = (0..args.tasks).map(|i| format!("t{i:07}")).collect();
    // A share of a tiered run's tasks due past the horizon: cold, then promoted.
    let delays: Vec<Option<Duration>> = (0..args.tasks)
        .map(|i| {
            (args.storage == Backend::Tiered && i % 100 < usize::from(args.far_percent))
                .then(crate::tiered::far_delay)
        })
        .collect();

    let servers: Vec<Arc<Mutex<PrivateServer>>> =
        servers.into_iter().map(|s| Arc::new(Mutex::new(s))).collect();
    let injector = {
        let fleet = Arc::clone(&fleet);
        let args = args.clone();
        let servers = servers.clone();
        std::thread::spawn(move || inject(&fleet, &servers, &args, started + run_for))
    };
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = tokio::spawn(sample_tiers(
        storage.clone(),
        ns.clone(),
        Arc::clone(&sampling),
        args.retry_percent > 0,
    ));

    let (submit_errors, due_ms) =
        submit_paced(&storage, &ns, &ids, &delays, started, run_for.mul_f64(0.9)).await;
    let handle = injector;
    let faults = handle.join().map_err(|_| "fault injector panicked")?;
    if let Err(e) = faults {
        eprintln!("fault injection stopped early: {e}");
    }

    let fault_end = Instant::now();
    let drained = drain(&storage, &ns, args.tasks, Duration::from_secs(args.drain_seconds), &fleet).await;
    let drain_time = fault_end.elapsed();
    lock(&fleet).stop_all(Duration::from_secs(10));
    sampling.store(false, Ordering::Relaxed);
    let (waiting_peak, demoted) = sampler.await.unwrap_or_default();

    let finals = read_finals(&storage, &ns).await?;
    let (events, torn) = read_dir(dir.path())?;
    let mut report = check(&events, &ids, &finals, args.lease_ms);
    check_due(&mut report, &events, &due_ms);
    report.waiting_peak = waiting_peak;
    if args.retry_percent > 0 {
        check_demoted(&mut report, &demoted, args.storage == Backend::Tiered);
    }
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
    let restarts: Vec<(&str, u32)> = servers
        .iter()
        .map(|s| {
            let s = lock(s);
            (backend_name(s.backend()), s.restarts())
        })
        .collect();
    print_summary(args, &report, started.elapsed(), drain_time, submit_errors, &restarts);
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
    servers: &[Arc<Mutex<PrivateServer>>],
    args: &RunArgs,
    until: Instant,
) -> Result<(), AnyError> {
    let every = Duration::from_millis(args.fault_every_ms.max(100));
    let max_faults = args.seconds * 1000 / every.as_millis().max(1) as u64 + 1;
    let lease = Duration::from_millis(args.lease_ms);
    // Store faults go round the servers (hot and cold tier in turn); each
    // server's restarts alternate crash and clean shutdown.
    let (mut restarts, mut drops) = (0usize, 0usize);
    let enabled: Vec<Fault> = args
        .faults
        .iter()
        .copied()
        .filter(|f| !servers.is_empty() || matches!(f, Fault::Kill | Fault::Stop))
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
        let done = match fault {
            Fault::Kill => lock(fleet).kill_one(),
            Fault::Stop => {
                lock(fleet).pause_one(lease + lease / 2 + Duration::from_millis(1_000));
                Ok(())
            }
            Fault::Restart => {
                let n = servers.len().max(1);
                let crash = (restarts / n).is_multiple_of(2);
                restarts += 1;
                match servers.get((restarts - 1) % n) {
                    Some(s) => restart_store(&lock(fleet), &mut lock(s), crash, Duration::from_millis(1_000)),
                    None => Ok(()),
                }
            }
            Fault::Drop => {
                drops += 1;
                match servers.get((drops - 1) % servers.len().max(1)) {
                    Some(s) => drop_connections(&lock(fleet), &lock(s)),
                    None => Ok(()),
                }
            }
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

/// Submits `ids` (due after `delays`, or now) in batches spread evenly over
/// `spread`; a batch that fails (store down) is retried until it is in,
/// idempotently. Returns the number of failed submit calls, the first error
/// text, and for each delayed task the earliest it can be due (wall-clock ms).
async fn submit_paced<S: Storage>(
    storage: &S,
    ns: &Namespace,
    ids: &[String],
    delays: &[Option<Duration>],
    started: Instant,
    spread: Duration,
) -> ((usize, Option<String>), HashMap<String, u64>) {
    const BATCH: usize = 50;
    let batches = ids.len().div_ceil(BATCH).max(1);
    let mut errors = 0;
    let mut first = None;
    let mut due_ms = HashMap::new();
    let give_up = started + spread + Duration::from_secs(120);
    for (n, (chunk, delays)) in ids.chunks(BATCH).zip(delays.chunks(BATCH)).enumerate() {
        let at = started + spread.mul_f64(n as f64 / batches as f64);
        tokio::time::sleep_until(at.into()).await;
        // The store reckons the due time from its clock during the first call that stores it.
        let first_call = now_ms();
        for (id, delay) in chunk.iter().zip(delays) {
            if let Some(d) = delay {
                due_ms.insert(id.clone(), first_call + d.as_millis() as u64);
            }
        }
        let mut left: Vec<(&String, Option<Duration>)> = chunk.iter().zip(delays.iter().copied()).collect();
        while !left.is_empty() && Instant::now() < give_up {
            let tasks: Vec<NewTask> = left.iter().filter_map(|(id, delay)| new_task(id, *delay)).collect();
            match storage.submit_many(ns, tasks).await {
                Ok(results) => {
                    let mut retry = Vec::new();
                    for (task, r) in left.iter().zip(results) {
                        if let Err(e) = r {
                            errors += 1;
                            first.get_or_insert_with(|| e.to_string());
                            retry.push(*task);
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
    ((errors, first), due_ms)
}

fn new_task(id: &str, delay: Option<Duration>) -> Option<NewTask> {
    let index: u64 = id.trim_start_matches('t').parse().ok()?;
    Some(NewTask {
        id: TaskId::new(id).ok()?,
        name: TASK_NAME.to_owned(),
        payload: index.to_string().into_bytes(),
        due: delay.map_or(Due::Now, Due::After),
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

/// The final record of every task, from every tier (the hot copy wins if a
/// half-done move left one in both; `copies` says so).
async fn read_finals<S: ChaosStore>(storage: &S, ns: &Namespace) -> Result<HashMap<String, Final>, AnyError> {
    let mut out: HashMap<String, Final> = HashMap::new();
    for (tier, records) in storage.tier_records(ns).await? {
        for t in records {
            out.entry(t.id.as_str().to_owned()).and_modify(|f| f.copies += 1).or_insert(Final {
                state: t.state.to_string(),
                fence: t.fence,
                tier,
                copies: 1,
            });
        }
    }
    Ok(out)
}

/// Samples the tasks waiting in each tier every 250 ms while `on`; returns
/// the most seen at once per tier (evidence that a tiered run used its cold
/// tier) and, when `demotions`, every task seen waiting in the cold tier
/// after an attempt (a retry moved there from the hot tier).
async fn sample_tiers<S: ChaosStore>(
    storage: S,
    ns: Namespace,
    on: Arc<AtomicBool>,
    demotions: bool,
) -> (BTreeMap<&'static str, u64>, HashSet<String>) {
    let mut peak: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut demoted = HashSet::new();
    while on.load(Ordering::Relaxed) {
        // A demoted retry waits 1-3 s in the cold tier: a sample every 250 ms sees nearly all.
        if demotions && let Ok(ids) = storage.demoted(&ns).await {
            demoted.extend(ids);
        }
        // A store outage only skips a sample.
        if let Ok(tiers) = storage.tier_counts(&ns).await {
            for (tier, c) in tiers {
                let waiting = c.get(TaskState::Created) + c.get(TaskState::Pending);
                let p = peak.entry(tier).or_default();
                *p = (*p).max(waiting);
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (peak, demoted)
}
