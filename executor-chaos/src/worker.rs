//! The worker role: an executor on the run's namespace whose one handler
//! records every attempt in this process's ledger, then sleeps 5-100 ms.

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use executor_core::{Executor, Handler, Namespace, TaskContext, TaskError};

use crate::{
    ledger::{Event, Ledger, now_ms},
    recorder::{ClaimStop, Recorded, Recorder},
    server::{AnyError, Backend},
    store::ChaosStore,
};

/// The handler every chaos task runs.
pub const TASK_NAME: &str = "chaos_step";

/// The delays, in ms, a first attempt picked by [`retries_far`] asks to be
/// retried after: past the tiered store's 3 s horizon
/// ([`crate::tiered::HORIZON`]), so the retry is demoted to the cold tier.
pub const RETRY_DELAY_MS: std::ops::RangeInclusive<u64> = 4_000..=6_000;

/// Whether the task with payload `index` asks for a far retry on its first
/// attempt, for `percent` % of the tasks. A fixed permutation of the index
/// mod 100 (37 is prime to 100), so the choice does not line up with the
/// controller's `index % 100 < far_percent` (tasks submitted far).
///
/// ```
/// use executor_chaos::worker::retries_far;
/// assert_eq!((0..1_000).filter(|i| retries_far(*i, 20)).count(), 200);
/// assert!(!(0..1_000).any(|i| retries_far(i, 0)));
/// ```
pub fn retries_far(index: u64, percent: u8) -> bool {
    (index % 100 * 37 + 11) % 100 < u64::from(percent)
}

/// Settings of one worker process.
#[derive(Clone, Debug, clap::Args)]
pub struct WorkerArgs {
    /// Store to use.
    #[arg(long, value_enum)]
    pub storage: Backend,
    /// Store URL (of the hot tier, Redis, for `tiered`).
    #[arg(long)]
    pub url: String,
    /// URL of the cold tier (MariaDB) of a `tiered` store.
    #[arg(long)]
    pub cold_url: Option<String>,
    /// Namespace of the run.
    #[arg(long)]
    pub ns: String,
    /// Ledger file (appended to).
    #[arg(long)]
    pub ledger: PathBuf,
    /// Lease in milliseconds; heartbeats every quarter lease.
    #[arg(long, default_value_t = 2_000)]
    pub lease_ms: u64,
    /// Attempts at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Shortest handler sleep, ms.
    #[arg(long, default_value_t = 5)]
    pub min_ms: u64,
    /// Longest handler sleep, ms.
    #[arg(long, default_value_t = 100)]
    pub max_ms: u64,
    /// Block the handler's thread this long with `std::thread::sleep`,
    /// ignoring cancellation (fault test: a handler stuck past its lease).
    #[arg(long, default_value_t = 0)]
    pub block_ms: u64,
    /// Percent of the tasks (chosen by [`retries_far`] from the task's
    /// index) whose first attempt asks for a retry after a delay in
    /// [`RETRY_DELAY_MS`], past a tiered store's horizon: the runtime writes
    /// it back `PENDING` and `TieredStorage` moves it to the cold tier. 0:
    /// every attempt completes.
    #[arg(long, default_value_t = 0)]
    pub retry_percent: u8,
    /// On `SIGUSR1`, `SIGSTOP` this process inside its next claim for this
    /// many ms ([`ClaimStop`]); 0: `SIGUSR1` is ignored.
    #[arg(long, default_value_t = 0)]
    pub claim_stop_ms: u64,
    /// Run on a single-threaded runtime (a blocked handler then also blocks
    /// the heartbeat, as on a starved machine).
    #[arg(long)]
    pub current_thread: bool,
}

/// Runs a worker until SIGTERM/Ctrl-C.
///
/// # Errors
/// The runtime, the store connection or the executor could not be built.
pub fn run(args: WorkerArgs) -> Result<(), AnyError> {
    let rt = if args.current_thread {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?
    };
    rt.block_on(async move {
        match args.storage {
            Backend::Redis => serve::<executor_redis::RedisStorage>(args).await,
            Backend::Mysql => serve::<executor_mysql::MySqlStorage>(args).await,
            Backend::Postgres => serve::<executor_postgres::PostgresStorage>(args).await,
            Backend::Tiered => serve::<crate::tiered::Tiered>(args).await,
        }
    })
}

async fn serve<S: ChaosStore>(args: WorkerArgs) -> Result<(), AnyError> {
    // First: SIGUSR1's default action would end the process.
    let armed = Arc::new(AtomicBool::new(false));
    let mut usr1 = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())?;
    let arm = Arc::clone(&armed);
    let enabled = args.claim_stop_ms > 0;
    tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            arm.store(enabled, Ordering::SeqCst);
        }
    });
    let ledger = Ledger::open(&args.ledger)?;
    let storage = S::connect_run(&args.url, args.cold_url.as_deref(), Duration::from_secs(60)).await?;
    Namespace::new(args.ns.clone())?;
    let lease = Duration::from_millis(args.lease_ms);
    let recorder = Recorder::new(ledger.clone()).with_claim_stop(ClaimStop {
        armed,
        pause: Duration::from_millis(args.claim_stop_ms),
        replies: ClaimStop::replies_of(args.storage),
    });
    let mut builder = Executor::builder(Recorded::new(storage, recorder))
        .namespace(args.ns.clone())
        .concurrency(args.concurrency)
        .claim_batch(args.concurrency)
        .lease(lease)
        .heartbeat_interval(lease / 4)
        .housekeeping_interval(housekeeping_interval(lease))
        .max_idle_wait(Duration::from_secs(1))
        .shutdown_grace(Duration::from_secs(2))
        .handler(handler(ledger.clone(), &args))
        .handler(tick_handler(Arc::new(ledger.clone())));
    for h in crate::victims::handlers(&Arc::new(ledger.clone())) {
        builder = builder.handler(h);
    }
    let executor = builder.build().await?;
    ledger.record(&Event::Up {
        pid: std::process::id(),
        worker: executor.worker_id().to_string(),
        t: now_ms(),
    });
    executor.run_until(executor_core::shutdown_signal()).await?;
    Ok(())
}

/// The housekeeping interval of a worker with lease `lease`: how often its
/// executor renews or takes the namespace's leadership, and so how often the
/// leader's scheduler re-reads the schedules.
pub fn housekeeping_interval(lease: Duration) -> Duration {
    (lease / 4).max(Duration::from_millis(100))
}

/// The handler of the run's cron ticks ([`crate::cron::TICK_TASK`]): records
/// its attempts in the ledger like the ordinary handler, so the checker's
/// double-run and overlap rules cover the tick tasks too, then sleeps 5-50 ms.
/// Records an attempt's start in the ledger; the guard records its end
/// (or that its future was dropped).
fn started(ledger: &Arc<Ledger>, ctx: &TaskContext) -> AbortGuard {
    let pid = std::process::id();
    let task = ctx.id().as_str().to_owned();
    let fence = ctx.fence();
    ledger.record(&Event::Start { task: task.clone(), fence, attempt: ctx.attempt(), pid, t: now_ms() });
    AbortGuard { ledger: Arc::clone(ledger), task, fence, pid, done: false }
}

fn tick_handler(ledger: Arc<Ledger>) -> Handler {
    // Faults never exhaust the attempts (as for the ordinary tasks): every
    // tick task must end COMPLETED.
    let options = executor_core::TaskOptions::new().retry_limit(executor_core::options::MAX_RETRY_LIMIT);
    Handler::new(crate::cron::TICK_TASK, move |(): (), ctx: TaskContext| {
        let ledger = Arc::clone(&ledger);
        async move {
            let guard = started(&ledger, &ctx);
            tokio::time::sleep(Duration::from_millis(rand::random_range(5..=50))).await;
            guard.finish();
            Ok::<(), TaskError>(())
        }
    })
    .options(options)
}

fn handler(ledger: Ledger, args: &WorkerArgs) -> Handler {
    let (min, max) = (args.min_ms.min(args.max_ms), args.max_ms.max(args.min_ms));
    let block = Duration::from_millis(args.block_ms);
    let retry_percent = args.retry_percent;
    let ledger = Arc::new(ledger);
    Handler::new(TASK_NAME, move |index: u64, ctx: TaskContext| {
        let ledger = Arc::clone(&ledger);
        async move {
            let guard = started(&ledger, &ctx);
            if block.is_zero() {
                tokio::time::sleep(Duration::from_millis(rand::random_range(min..=max))).await;
            } else {
                // Deliberately blocks the thread and ignores cancellation.
                std::thread::sleep(block);
            }
            if ctx.attempt() == 1 && retries_far(index, retry_percent) {
                let delay_ms = rand::random_range(RETRY_DELAY_MS);
                ledger.record(&Event::Retry {
                    task: guard.task.clone(),
                    fence: guard.fence,
                    delay_ms,
                    pid: guard.pid,
                    t: now_ms(),
                });
                guard.finish();
                return Err(TaskError::retry_after(
                    "chaos: retry asked past the horizon",
                    Duration::from_millis(delay_ms),
                ));
            }
            guard.finish();
            Ok::<(), TaskError>(())
        }
    })
}

/// Records `End` when the handler returns, `Abort` when its future is
/// dropped first (the runtime stopped the attempt).
struct AbortGuard {
    ledger: Arc<Ledger>,
    task: String,
    fence: u64,
    pid: u32,
    done: bool,
}

impl AbortGuard {
    fn finish(mut self) {
        self.done = true;
        self.ledger.record(&Event::End {
            task: std::mem::take(&mut self.task),
            fence: self.fence,
            pid: self.pid,
            t: now_ms(),
        });
    }
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if !self.done {
            self.ledger.record(&Event::Abort {
                task: std::mem::take(&mut self.task),
                fence: self.fence,
                pid: self.pid,
                t: now_ms(),
            });
        }
    }
}
