//! The claim loop and the shutdown sequence.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::{
    sync::{Notify, OwnedSemaphorePermit, Semaphore},
    task::JoinHandle,
    time::Instant,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::{Executor, attempt, heartbeat, history, housekeeping};
use crate::{
    Error, QueueName, Result, TaskId,
    queue::ClaimPlan,
    storage::{ExecutorStorage, Lease},
};

/// Why the runtime stopped an attempt early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// A user asked to cancel the task.
    CancelRequested,
    /// The lease is gone (or could not be renewed in time): another worker
    /// may run the task now, so this attempt must stop (no two live attempts).
    LeaseLost,
    /// Shutdown's grace period ran out.
    Shutdown,
}

/// One running attempt, as the heartbeat and shutdown see it.
#[derive(Debug)]
pub(crate) struct InFlight {
    pub(crate) lease: Lease,
    /// Fired to ask the handler to stop (its `TaskContext` token).
    pub(crate) cancel: CancellationToken,
    /// Fired to abort the handler's future.
    pub(crate) kill: CancellationToken,
    pub(crate) reason: Option<StopReason>,
    /// When the lease runs out by this process's clock, as of the last renewal.
    pub(crate) lease_expires: Instant,
    /// The handler has returned and its result is being written: nothing is
    /// left to stop, and a heartbeat that races the write and finds the task
    /// already finished is no lost lease.
    pub(crate) finishing: bool,
}

/// State shared by the claim loop, the attempts, the heartbeat and housekeeping.
pub(crate) struct Shared<S> {
    pub(crate) executor: Executor<S>,
    /// Stops the whole executor (`StopHandle::stop`, `TaskContext::stop_executor`).
    pub(crate) stop: CancellationToken,
    pub(crate) slots: Arc<Semaphore>,
    /// Results being written: an attempt whose handler has returned gives
    /// its slot back while its result goes to the store, so the next claim
    /// overlaps that write; these `concurrency` permits bound the writes in
    /// flight (memory stays bounded), and an attempt waits for one holding its slot.
    pub(crate) finishing: Arc<Semaphore>,
    pub(crate) in_flight: Mutex<HashMap<TaskId, InFlight>>,
    pub(crate) attempts: TaskTracker,
    /// This process's term as the namespace's leader, set by housekeeping
    /// and watched by the cron scheduler.
    pub(crate) leadership: tokio::sync::watch::Sender<Option<crate::storage::Leadership>>,
    /// Attempts finished since the last history flush, by task name.
    pub(crate) tally: Mutex<history::Tally>,
    /// Attempts of this executor whose end was written to the store: each
    /// may have freed a slot of a queue with a concurrency limit, which the
    /// store's wait leaves out while it is full. The claim loop reads it
    /// before a claim and looks again at once when it moved.
    pub(crate) ended: AtomicU64,
    /// Wakes the idle claim loop when `ended` moves.
    pub(crate) ended_wake: Notify,
}

impl<S: ExecutorStorage> Shared<S> {
    pub(crate) fn in_flight(&self) -> MutexGuard<'_, HashMap<TaskId, InFlight>> {
        // A panic elsewhere while holding the lock must not stop the runtime.
        self.in_flight.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn tally(&self) -> MutexGuard<'_, history::Tally> {
        self.tally.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one finished attempt for the throughput history, in memory
    /// (the store hears of it at the next flush), if history is on.
    pub(crate) fn count_attempt(&self, name: &str, succeeded: bool) {
        if self.config().history_every.is_some() {
            self.tally().record(name, succeeded);
        }
    }

    /// Tells the claim loop that an attempt's end is in the store: a slot
    /// it held in a limited queue is free for the next claim, here or in
    /// any process (the stores wake the others).
    pub(crate) fn attempt_ended(&self) {
        self.ended.fetch_add(1, Ordering::SeqCst);
        self.ended_wake.notify_waiters();
    }

    pub(crate) fn config(&self) -> &super::Config {
        &self.executor.inner.config
    }

    pub(crate) fn update_slot_gauges(&self) {
        let free = self.slots.available_permits();
        crate::metrics::slots(
            self.executor.namespace(),
            self.config().concurrency.saturating_sub(free),
            free,
        );
    }

    /// Stops the attempt of `id` holding `fence`: asks the handler to stop,
    /// and aborts it now (lost lease, shutdown) or after the cancel grace
    /// (cancel request). Keyed by fence, so a late report about an older
    /// attempt of the same task never stops a newer one. Returns whether an
    /// attempt that was still running was stopped (callers log only then).
    pub(crate) fn stop_attempt(&self, id: &TaskId, fence: u64, reason: StopReason) -> bool {
        let mut map = self.in_flight();
        let Some(f) = map.get_mut(id) else { return false };
        if f.lease.fence != fence || f.finishing {
            return false;
        }
        if f.reason.is_some() && reason == StopReason::CancelRequested {
            return false;
        }
        f.reason = Some(reason);
        f.cancel.cancel();
        match reason {
            StopReason::CancelRequested => {
                let kill = f.kill.clone();
                let grace = self.config().cancel_grace;
                tokio::spawn(async move {
                    tokio::select! {
                        () = tokio::time::sleep(grace) => kill.cancel(),
                        () = kill.cancelled() => {}
                    }
                });
            }
            StopReason::LeaseLost | StopReason::Shutdown => f.kill.cancel(),
        }
        true
    }
}

/// What a graceful shutdown did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Attempts that finished during the grace period.
    pub drained: usize,
    /// Attempts cancelled at the end of the grace period; their leases were
    /// given back (`PENDING`, attempt not counted).
    pub released: usize,
}

/// A started executor. Dropping it without [`RunningExecutor::shutdown`]
/// leaves the runtime running in the background until the tokio runtime ends.
#[derive(Debug)]
#[must_use = "call `.shutdown().await` to stop gracefully"]
pub struct RunningExecutor {
    stop: CancellationToken,
    slots: Arc<Semaphore>,
    concurrency: usize,
    join: JoinHandle<ShutdownReport>,
}

impl RunningExecutor {
    /// Stops claiming, drains running attempts up to the grace period,
    /// cancels the rest and gives their leases back, releases leadership.
    ///
    /// # Errors
    /// Only if the runtime's background task panicked.
    pub async fn shutdown(self) -> Result<ShutdownReport> {
        self.stop.cancel();
        self.join.await.map_err(|e| Error::Runtime(format!("the runtime's background task failed: {e}")))
    }

    /// Attempts running now.
    pub fn in_flight(&self) -> usize {
        self.concurrency.saturating_sub(self.slots.available_permits())
    }

    /// A handle that starts the graceful shutdown from anywhere (a signal
    /// handler, an admin endpoint, another task); the owner of this
    /// `RunningExecutor` still awaits [`RunningExecutor::shutdown`] for the
    /// report.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.stop.clone())
    }
}

/// Starts the graceful shutdown of one executor: claims stop, running
/// attempts drain. Cheap to clone; from [`RunningExecutor::stop_handle`],
/// or inside a handler through [`crate::TaskContext::stop_executor`].
///
/// ```
/// use reliable_executor::{Executor, MemoryStorage};
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let executor = Executor::builder(MemoryStorage::new()).build().await?;
/// let running = executor.start();
/// let stop = running.stop_handle();
/// tokio::spawn(async move { stop.stop() }); // e.g. from an admin endpoint
/// running.stop_handle().stopped().await;
/// running.shutdown().await?;
/// # Ok::<(), reliable_executor::Error>(()) })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct StopHandle(pub(crate) CancellationToken);

impl StopHandle {
    /// Starts the shutdown (again: no effect).
    pub fn stop(&self) {
        self.0.cancel();
    }

    /// Whether the shutdown has started.
    pub fn is_stopped(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves once the shutdown has started.
    pub async fn stopped(&self) {
        self.0.cancelled().await;
    }
}

pub(super) fn start<S: ExecutorStorage>(executor: Executor<S>) -> RunningExecutor {
    let stop = CancellationToken::new();
    let concurrency = executor.inner.config.concurrency;
    let shared = Arc::new(Shared {
        executor,
        stop: stop.clone(),
        slots: Arc::new(Semaphore::new(concurrency)),
        finishing: Arc::new(Semaphore::new(concurrency)),
        in_flight: Mutex::new(HashMap::new()),
        attempts: TaskTracker::new(),
        leadership: tokio::sync::watch::Sender::new(None),
        tally: Mutex::new(history::Tally::default()),
        ended: AtomicU64::new(0),
        ended_wake: Notify::new(),
    });
    let slots = Arc::clone(&shared.slots);
    let join = tokio::spawn(run(shared, stop.clone()));
    RunningExecutor { stop, slots, concurrency, join }
}

async fn run<S: ExecutorStorage>(shared: Arc<Shared<S>>, stop: CancellationToken) -> ShutdownReport {
    let background = CancellationToken::new();
    let heartbeat = tokio::spawn(heartbeat::run(Arc::clone(&shared), background.clone()));
    let housekeeping = tokio::spawn(housekeeping::run(Arc::clone(&shared), background.clone()));
    let scheduler = crate::runtime::scheduler::Scheduler {
        storage: Arc::clone(shared.executor.client().storage_arc()),
        ns: shared.executor.namespace().clone(),
        registry: shared.executor.registry().clone(),
        refresh: shared.config().housekeeping,
        misfire_grace: shared.config().misfire_grace,
    };
    let scheduler = tokio::spawn(scheduler.run(shared.leadership.subscribe(), background.clone()));
    let history = shared
        .config()
        .history_every
        .map(|every| tokio::spawn(history::run(Arc::clone(&shared), every, background.clone())));
    shared.update_slot_gauges();

    claim_loop(&shared, &stop).await;

    // Shutdown: claiming has stopped; heartbeats go on while attempts drain.
    let running = shared.in_flight().len();
    shared.attempts.close();
    let grace = shared.config().shutdown_grace;
    let drained_in_time = tokio::time::timeout(grace, shared.attempts.wait()).await.is_ok();
    let mut released = 0;
    if !drained_in_time {
        let leases: Vec<Lease> = shared.in_flight().values().map(|f| f.lease.clone()).collect();
        for lease in &leases {
            if shared.stop_attempt(&lease.id, lease.fence, StopReason::Shutdown) {
                released += 1;
            }
        }
        // Aborted attempts only write their release; bound the wait anyway.
        if tokio::time::timeout(shared.config().lease, shared.attempts.wait()).await.is_err() {
            tracing::error!("attempts did not release their leases in time; the leader will reap them");
        }
    }
    background.cancel();
    let _ = heartbeat.await;
    let _ = housekeeping.await;
    let _ = scheduler.await;
    if let Some(history) = history {
        let _ = history.await;
    }
    tracing::info!(drained = running - released.min(running), released, "executor stopped");
    ShutdownReport { drained: running.saturating_sub(released), released }
}

/// Claims only as many tasks as there are free slots (bounded memory: nothing
/// queues up in memory), then waits for the store's wake-up when idle.
async fn claim_loop<S: ExecutorStorage>(shared: &Arc<Shared<S>>, stop: &CancellationToken) {
    let executor = &shared.executor;
    let storage = executor.client().storage_arc();
    let ns = executor.namespace();
    let worker = executor.worker_id();
    let config = shared.config();
    let mut queues = config.queues.clone();
    // The default queue alone takes the store's plain claim and wait.
    let default_only = queues.queues().all(|(q, _)| q.is_default());
    let served: Vec<QueueName> = queues.queues().map(|(q, _)| q.clone()).collect();
    let mut error_pause = Duration::from_millis(50);
    loop {
        let first = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            permit = Arc::clone(&shared.slots).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let mut permits: Vec<OwnedSemaphorePermit> = vec![first];
        while permits.len() < config.claim_batch {
            match Arc::clone(&shared.slots).try_acquire_owned() {
                Ok(p) => permits.push(p),
                Err(_) => break,
            }
        }
        let wanted = permits.len();
        let ended_before = shared.ended.load(Ordering::SeqCst);
        // The lease runs from when the store granted it, which is after this
        // instant: count its local expiry from here, never from a later point.
        let sent = tokio::time::Instant::now();
        let claimed = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            r = async {
                let plan = if default_only { ClaimPlan::default_queue(wanted) } else { queues.plan(wanted) };
                storage.claim(ns, worker, &plan, config.lease).await
            } => r,
        };
        match claimed {
            Ok(tasks) => {
                error_pause = Duration::from_millis(50);
                let got = tasks.len();
                for task in tasks {
                    // The store never returns more than asked; a misbehaving one
                    // gets its extra tasks released rather than over-committing.
                    let Some(permit) = permits.pop() else {
                        attempt::release_excess(shared, task).await;
                        continue;
                    };
                    attempt::spawn(shared, task, permit, sent);
                }
                drop(permits);
                shared.update_slot_gauges();
                if got < wanted {
                    // Registered before `ended` is read again, so an attempt
                    // ending between the read and the wait still ends it.
                    let ended = shared.ended_wake.notified();
                    tokio::pin!(ended);
                    ended.as_mut().enable();
                    if shared.ended.load(Ordering::SeqCst) != ended_before {
                        // An attempt ended while the claim ran: the slot it
                        // freed may be what held the claim short.
                        continue;
                    }
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => return,
                        () = &mut ended => {}
                        // The served queues only: a due task of another,
                        // a paused or a limited queue must not end the wait
                        // at once (the loop would spin).
                        r = storage.wait_for_work(ns, &served, config.max_idle_wait) => {
                            if let Err(e) = r {
                                tracing::warn!(error = %e, "wait for work failed");
                                tokio::select! {
                                    () = stop.cancelled() => return,
                                    () = tokio::time::sleep(error_pause) => {}
                                }
                            }
                        }
                    }
                }
            }
            Err(e) => {
                drop(permits);
                tracing::warn!(error = %e, retry_in = ?error_pause, "claim failed; retrying");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(error_pause) => {}
                }
                // Short pauses so claiming resumes within a second of the store returning.
                error_pause = (error_pause * 2).min(Duration::from_millis(500));
            }
        }
    }
}
