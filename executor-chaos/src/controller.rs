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

use executor_core::{
    ListQuery, Namespace, TaskId, TaskRecord, TaskState,
    storage::{Due, NewTask, Storage, SubmitMode},
};

use crate::{
    check::{Final, check, check_demoted, check_due, check_victims},
    fleet::{Fleet, backend_name, drop_connections, restart_store},
    ledger::{Ledger, now_ms, read_dir},
    process::TempDir,
    server::{AnyError, Backend, PrivateServer},
    store::ChaosStore,
    summary::print_summary,
    victims::{Outcome, Victim, VictimKind, is_victim},
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
    /// A worker `SIGSTOP`s itself while a reply of its claim is pending
    /// (MariaDB: the claim's transaction open, its rows locked; PostgreSQL:
    /// its connection check-out or its claim statement in flight), past its
    /// lease. SQL backends only ([`Backend::pauses_inside_claims`]; a
    /// Redis claim is one script call).
    ClaimStop,
    /// `--first-start-processes` processes connect at once to a new, empty
    /// database on the MariaDB server, racing on the migrations. Backends
    /// with a MariaDB server (mysql, tiered).
    FirstStart,
    /// No fault (`--faults none`: a run of victims alone).
    None,
}

impl Fault {
    /// Whether this fault applies to a run of `backend` over `servers`.
    fn applies(self, backend: Backend, servers: &[Arc<Mutex<PrivateServer>>]) -> bool {
        match self {
            Fault::Kill | Fault::Stop => true,
            Fault::Restart | Fault::Drop => !servers.is_empty(),
            Fault::ClaimStop => backend.pauses_inside_claims(),
            Fault::FirstStart => servers.iter().any(|s| lock(s).backend() == Backend::Mysql),
            Fault::None => false,
        }
    }
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
    /// (`claim-stop` and `first-start` are left out where they do not apply.)
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "kill,stop,restart,drop,claim-stop,first-start"
    )]
    pub faults: Vec<Fault>,
    /// Processes of each `first-start` fault.
    #[arg(long, default_value_t = 4)]
    pub first_start_processes: usize,
    /// Victims of each kind in `--victim-kinds`, submitted in rounds during
    /// the run next to the ordinary tasks; 0: none.
    #[arg(long, default_value_t = 4)]
    pub victims: usize,
    /// The kinds of victims.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "corrupt,panic-decode,panic-start,retry-overflow"
    )]
    pub victim_kinds: Vec<VictimKind>,
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
    /// The cron expression of the run's schedule ([`crate::cron`]: put once
    /// a leader is elected, checked at the end); `none`: no schedule.
    #[arg(long, default_value = crate::cron::EXPRESSION)]
    pub cron: String,
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
        Backend::Postgres => rt.block_on(drive::<executor_postgres::PostgresStorage>(&args, stores, &dir))?,
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
        claim_stop_ms: if args.faults.contains(&Fault::ClaimStop) && args.storage.pauses_inside_claims() {
            u64::try_from(pause(args.lease_ms).as_millis()).unwrap_or(u64::MAX)
        } else {
            0
        },
    };
    let ledger = Ledger::open(&dir.path().join("controller.log"))?;
    let fleet = Arc::new(Mutex::new(Fleet::new(template, dir.path().to_path_buf(), ledger)));
    for _ in 0..args.workers.max(1) {
        lock(&fleet).spawn(&[])?;
    }
    let leader = Arc::new(Mutex::new(None));
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = tokio::spawn(crate::cron::watch_leader(
        storage.clone(),
        ns.clone(),
        Arc::clone(&watching),
        Arc::clone(&leader),
        lock(&fleet).ledger.clone(),
    ));
    let timing = crate::cron::Timing {
        lease_ms: args.lease_ms,
        housekeeping_ms: u64::try_from(
            crate::worker::housekeeping_interval(Duration::from_millis(args.lease_ms)).as_millis(),
        )
        .unwrap_or(u64::MAX),
    };
    let cron = match args.cron.as_str() {
        "none" => None,
        expression => Some(crate::cron::start(&storage, &ns, expression).await?),
    };
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
        let leader = Arc::clone(&leader);
        std::thread::spawn(move || inject(&fleet, &servers, &args, &leader, started + run_for))
    };
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = tokio::spawn(sample_tiers(
        storage.clone(),
        ns.clone(),
        Arc::clone(&sampling),
        args.retry_percent > 0,
    ));

    let victims = crate::victims::plan(args.storage, &args.victim_kinds, args.victims);
    let victim_rounds = tokio::spawn(submit_victims(
        storage.clone(),
        ns.clone(),
        victims,
        args.victim_kinds.len(),
        started,
        run_for.mul_f64(0.9),
    ));
    let (submit_errors, due_ms) =
        submit_paced(&storage, &ns, &ids, &delays, started, run_for.mul_f64(0.9)).await;
    let victims = victim_rounds.await.map_err(|_| "victim submitter panicked")?;
    let handle = injector;
    let faults = handle.join().map_err(|_| "fault injector panicked")?;
    if let Err(e) = faults {
        eprintln!("fault injection stopped early: {e}");
    }

    let fault_end = Instant::now();
    let drained =
        drain(&storage, &ns, args.tasks, &victims, Duration::from_secs(args.drain_seconds), &fleet).await;
    let drain_time = fault_end.elapsed();
    // The window ends a second before now: the tick due in the last second
    // may not be fired yet.
    let cron_window = match &cron {
        Some((schedule, first)) => {
            let end = storage.now(&ns).await?.saturating_sub(Duration::from_secs(1));
            Some(crate::cron::settle(&storage, &ns, schedule, *first, end, timing).await)
        }
        None => None,
    };
    lock(&fleet).stop_all(Duration::from_secs(10));
    sampling.store(false, Ordering::Relaxed);
    watching.store(false, Ordering::Relaxed);
    let (waiting_peak, demoted) = sampler.await.unwrap_or_default();
    watcher.await.map_err(|_| "leader watcher panicked")?;

    let (finals, ticks, list_error) = read_finals(&storage, &ns, &ids).await?;
    let mut outcomes = Vec::with_capacity(victims.len());
    for v in &victims {
        outcomes.push(Outcome::read(&storage, &ns, &v.id).await);
    }
    let (events, torn) = read_dir(dir.path())?;
    let mut report = check(&events, &ids, &finals, args.lease_ms);
    check_victims(&mut report, &victims, &outcomes);
    report.violations.extend(list_error);
    delete_victims(&storage, &ns, &victims, &mut report).await;
    check_due(&mut report, &events, &due_ms);
    report.waiting_peak = waiting_peak;
    if let (Some((schedule, first)), Some(last)) = (&cron, cron_window) {
        let (window, after_window, stray) = crate::cron::window(schedule, *first, last, &ticks);
        let mut c =
            crate::cron::CronReport { expression: schedule.cron.clone(), after_window, ..Default::default() };
        crate::cron::check_ticks(&mut report, &mut c, &window, &events, timing);
        for id in stray.iter().take(5) {
            report.violations.push(format!("cron task {id} is of no tick of the run's window"));
        }
        report.cron = Some(c);
    }
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
    // The counts hold the cron schedule's tasks too.
    let submitted = args.tasks as u64 + ticks.len() as u64;
    if counts.total() != submitted {
        let text = format!(
            "counts add up to {}, {} were submitted ({} by the cron schedule)",
            counts.total(),
            submitted,
            ticks.len()
        );
        // A record edited by hand changes its state behind the counts' back.
        if victims.iter().any(|v| v.corrupted) {
            report.notes.push(format!("{text} (after hand-corrupted records: not checked)"));
        } else {
            report.violations.push(text);
        }
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
    // Before the servers stop, when `servers` is dropped.
    storage.close().await;
    Ok(report.violations.is_empty())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fault loop, on its own thread: bounded by `until` and by count.
/// Every other kill, the first included, is aimed at the namespace's leader
/// (`leader`, as [`crate::cron::watch_leader`] last saw it), so the cron
/// schedule's failover is exercised; and if half the run has passed without
/// a leader kill, the next fault is one, whatever the round robin says.
fn inject(
    fleet: &Mutex<Fleet>,
    servers: &[Arc<Mutex<PrivateServer>>],
    args: &RunArgs,
    leader: &Mutex<Option<String>>,
    until: Instant,
) -> Result<(), AnyError> {
    let half_run = until.checked_sub(Duration::from_secs(args.seconds) / 2).unwrap_or(until);
    let (mut kills, mut leader_killed) = (0usize, false);
    let every = Duration::from_millis(args.fault_every_ms.max(100));
    let max_faults = args.seconds * 1000 / every.as_millis().max(1) as u64 + 1;
    // Store faults go round the servers (hot and cold tier in turn); each
    // server's restarts alternate crash and clean shutdown.
    let (mut restarts, mut drops) = (0usize, 0usize);
    let enabled: Vec<Fault> =
        args.faults.iter().copied().filter(|f| f.applies(args.storage, servers)).collect();
    let mut first_starts = 0usize;
    // Round robin over a shuffled order, so every kind of fault happens.
    let offset = rand::random_range(0..enabled.len().max(1));
    for n in 0..max_faults {
        let jitter = every.mul_f64(rand::random_range(0.5..1.5));
        if Instant::now() + jitter >= until {
            break;
        }
        std::thread::sleep(jitter);
        let Some(&picked) = enabled.get((n as usize + offset) % enabled.len().max(1)) else { break };
        let overdue = !leader_killed && enabled.contains(&Fault::Kill) && Instant::now() >= half_run;
        let fault = if overdue { Fault::Kill } else { picked };
        let done = match fault {
            Fault::Kill if kills.is_multiple_of(2) || overdue => {
                kills += 1;
                let worker = lock(leader).clone();
                lock(fleet).kill_leader(worker.as_deref()).map(|hit| leader_killed |= hit)
            }
            Fault::Kill => {
                kills += 1;
                lock(fleet).kill_one()
            }
            Fault::Stop => {
                lock(fleet).pause_one(pause(args.lease_ms));
                Ok(())
            }
            Fault::ClaimStop => {
                lock(fleet).arm_claim_stop();
                // The worker stops itself at its next claim; no other fault meanwhile.
                std::thread::sleep(pause(args.lease_ms) + Duration::from_millis(500));
                Ok(())
            }
            Fault::FirstStart => {
                first_starts += 1;
                first_start(fleet, servers, args, first_starts)
            }
            Fault::None => Ok(()),
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

/// How long a paused worker stays stopped: past its lease (1.5 leases + 1 s).
fn pause(lease_ms: u64) -> Duration {
    let lease = Duration::from_millis(lease_ms);
    lease + lease / 2 + Duration::from_millis(1_000)
}

/// One round of concurrent first starts on the run's MariaDB server; the
/// outcome goes to the controller's ledger (`first_start` or
/// `first_start_failed`, which the checker counts as a violation).
fn first_start(
    fleet: &Mutex<Fleet>,
    servers: &[Arc<Mutex<PrivateServer>>],
    args: &RunArgs,
    n: usize,
) -> Result<(), AnyError> {
    let Some(server) = servers.iter().find(|s| lock(s).backend() == Backend::Mysql) else { return Ok(()) };
    let port = lock(server).port();
    let exe = std::env::current_exe()?;
    let r = crate::first_start::round(&exe, port, &format!("fresh{n}"), "chaos", args.first_start_processes)?;
    let f = lock(fleet);
    if r.passed() {
        f.note(
            "first_start",
            None,
            format!("{} of {} connected at once, schema complete", r.ok, r.processes),
        );
    } else {
        let mut what = r.errors.clone();
        what.extend(r.schema_diff.iter().take(5).cloned());
        f.note(
            "first_start_failed",
            None,
            format!("{} of {} connected; {}", r.ok, r.processes, what.join(" | ")),
        );
    }
    Ok(())
}

/// Submits the victims in rounds (one of each kind per round) spread over
/// `spread`, retrying a submit while the store is down (30 s at most); a
/// corrupt victim's record is edited right after its submit, while it
/// waits. Returns the victims with `submitted` and `corrupted` set.
async fn submit_victims<S: ChaosStore>(
    storage: S,
    ns: Namespace,
    mut victims: Vec<Victim>,
    kinds: usize,
    started: Instant,
    spread: Duration,
) -> Vec<Victim> {
    let kinds = kinds.max(1);
    let rounds = victims.len().div_ceil(kinds);
    for (n, round) in victims.chunks_mut(kinds).enumerate() {
        let at = started + spread.mul_f64((n + 1) as f64 / (rounds + 1) as f64);
        tokio::time::sleep_until(at.into()).await;
        for v in round {
            let Ok(task) = v.new_task() else { continue };
            let give_up = Instant::now() + Duration::from_secs(30);
            loop {
                let sent = Instant::now();
                // The same submit again (same id and nonce): one whose
                // answer was lost is answered as stored, not as a duplicate.
                match storage.submit(&ns, task.resend()).await {
                    Ok(_) => {
                        v.submitted = true;
                        // Past its due time a claim may hold it already: leave it alone.
                        if let Some(c) = v.corruption
                            && sent.elapsed() + Duration::from_millis(300) < v.delay()
                        {
                            match storage.corrupt(&ns, &v.id, c).await {
                                Ok(done) => v.corrupted = done,
                                Err(e) => {
                                    eprintln!("corrupting victim {}: {e}", v.id);
                                    v.edit_refused = true;
                                }
                            }
                        }
                        break;
                    }
                    Err(e) if Instant::now() >= give_up => {
                        eprintln!("victim {} was never submitted: {e}", v.id);
                        break;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        }
    }
    victims
}

/// Deletes every victim with `Storage::delete` (it must take any record,
/// readable or not); afterwards `get` must find nothing.
async fn delete_victims<S: Storage>(
    storage: &S,
    ns: &Namespace,
    victims: &[Victim],
    report: &mut crate::check::Report,
) {
    for v in victims.iter().filter(|v| v.submitted) {
        let Ok(id) = TaskId::new(&v.id) else { continue };
        if let Err(e) = storage.delete(ns, &id).await {
            report.violations.push(format!("victim {} ({}): delete failed: {e}", v.id, v.label()));
            continue;
        }
        match Outcome::read(storage, ns, &v.id).await {
            Outcome::Gone => report.victims_deleted += 1,
            other => {
                report.violations.push(format!("victim {} ({}): still {other} after delete", v.id, v.label()))
            }
        }
    }
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
    let mut task = NewTask::new(TaskId::new(id).ok()?, TASK_NAME, index.to_string().into_bytes());
    task.due = delay.map_or(Due::Now, Due::After);
    // Faults never exhaust the attempts: every re-run must come from a fault.
    task.max_attempts = 10_001;
    task.mode = SubmitMode::Idempotent;
    Some(task)
}

/// Waits until every ordinary task is terminal, then up to
/// [`VICTIM_GRACE`] more for the victims to settle; keeps the fleet at
/// strength. Returns whether the ordinary tasks drained.
async fn drain<S: Storage>(
    storage: &S,
    ns: &Namespace,
    tasks: usize,
    victims: &[Victim],
    limit: Duration,
    fleet: &Mutex<Fleet>,
) -> bool {
    let end = Instant::now() + limit;
    let mut drained_at: Option<Instant> = None;
    while Instant::now() < end {
        if drained_at.is_none() && drained(storage, ns, tasks, victims.len()).await {
            drained_at = Some(Instant::now());
        }
        if let Some(at) = drained_at {
            let mut settled = true;
            for v in victims.iter().filter(|v| v.submitted) {
                settled &= Outcome::read(storage, ns, &v.id).await.is_settled();
            }
            if settled || at.elapsed() > VICTIM_GRACE {
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
    drained_at.is_some()
}

/// Most time the victims get to settle once the ordinary tasks are done
/// (a victim still waiting then is reported, not waited for).
const VICTIM_GRACE: Duration = Duration::from_secs(15);

/// Whether no ordinary task waits or runs. The counts say so at once when
/// nothing waits; with victims they may count a few waiting (a victim, or a
/// count a hand edit left behind), and then the waiting tasks are listed.
async fn drained<S: Storage>(storage: &S, ns: &Namespace, tasks: usize, victims: usize) -> bool {
    let waiting_states = [TaskState::Created, TaskState::Pending, TaskState::Running];
    let Ok(c) = storage.counts(ns).await else { return false };
    let waiting = waiting_states.iter().map(|s| c.get(*s)).sum::<u64>();
    if waiting == 0 && c.total() >= tasks as u64 {
        return true;
    }
    if waiting > victims as u64 {
        return false;
    }
    for state in waiting_states {
        let mut query = ListQuery::new(state, 1_000);
        loop {
            let Ok(page) = storage.list(ns, query.clone()).await else { return false };
            if page.tasks.iter().any(|t| !is_victim(t.id.as_str())) {
                return false;
            }
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => break,
            }
        }
    }
    true
}

/// The final record of every ordinary task and cron tick task, from every
/// tier (the hot copy wins if a half-done move left one in both; `copies`
/// says so), and the tick tasks' records. A submitted task no list shows is
/// looked up by id (at most 1,000 of them) and marked `unlisted`: a record
/// stranded outside every index.
async fn read_finals<S: ChaosStore>(
    storage: &S,
    ns: &Namespace,
    submitted: &[String],
) -> Result<(HashMap<String, Final>, Vec<TaskRecord>, Option<String>), AnyError> {
    let mut ticks = Vec::new();
    let mut out: HashMap<String, Final> = HashMap::new();
    // A list that fails over one bad record hides every task: a violation,
    // not a setup error; the tasks are then read one by one.
    let (tiers, list_error) = match storage.tier_records(ns).await {
        Ok(t) => (t, None),
        Err(e) => (Vec::new(), Some(format!("listing the final records failed: {e}"))),
    };
    for (tier, records) in tiers {
        for t in records.into_iter().filter(|t| !is_victim(t.id.as_str())) {
            if let Some(f) = out.get_mut(t.id.as_str()) {
                f.copies += 1;
                continue;
            }
            out.insert(
                t.id.as_str().to_owned(),
                Final { state: t.state.to_string(), fence: t.fence, tier, copies: 1 },
            );
            if crate::cron::is_tick(t.id.as_str()) {
                ticks.push(t);
            }
        }
    }
    let most = if list_error.is_some() { 20_000 } else { 1_000 };
    let unlisted: Vec<&String> = submitted.iter().filter(|id| !out.contains_key(*id)).take(most).collect();
    for id in unlisted {
        let Ok(tid) = TaskId::new(id.as_str()) else { continue };
        let (state, fence) = match storage.get(ns, &tid).await {
            Ok(None) => continue,
            Ok(Some(t)) => (t.state.to_string(), t.fence),
            Err(e) => (format!("unreadable ({e})"), 0),
        };
        let tier = if list_error.is_some() { "store" } else { "unlisted" };
        out.insert(id.clone(), Final { state, fence, tier, copies: 1 });
    }
    Ok((out, ticks, list_error))
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
