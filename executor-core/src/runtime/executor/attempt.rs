//! One attempt: find the handler, decode, run under the time limit, catch
//! panics, and write the result with the lease's fence.

use std::{panic::AssertUnwindSafe, sync::Arc, time::Duration};

use tokio::{sync::OwnedSemaphorePermit, time::Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::run::{InFlight, Shared, StopReason};
use crate::{
    Action, Error, TaskContext, TaskError, TaskId, TaskRecord, TaskState, Timestamp,
    attempt_log::MAX_ERROR_LEN,
    metrics as m,
    storage::{ExecutorStorage, Finish, Lease},
    time::MAX_DURATION,
};

/// Removes an attempt's in-flight entry when dropped: however the attempt
/// ends (returns, or panics in runtime or user code), its lease stops being
/// renewed and the reaper recovers the task (no neighbour harm).
struct InFlightEntry<'a, S: ExecutorStorage> {
    shared: &'a Shared<S>,
    id: TaskId,
    fence: u64,
}

impl<S: ExecutorStorage> Drop for InFlightEntry<'_, S> {
    fn drop(&mut self) {
        let mut map = self.shared.in_flight();
        if map.get(&self.id).is_some_and(|f| f.lease.fence == self.fence) {
            map.remove(&self.id);
        }
    }
}

pub(super) fn spawn<S: ExecutorStorage>(
    shared: &Arc<Shared<S>>,
    task: TaskRecord,
    permit: OwnedSemaphorePermit,
    claim_sent: Instant,
) {
    let shared_for_task = Arc::clone(shared);
    let span =
        tracing::info_span!("attempt", task.id = %task.id, task.name = %task.name, attempt = task.attempts);
    shared.attempts.spawn(
        async move {
            run(&shared_for_task, task, claim_sent, permit).await;
            shared_for_task.update_slot_gauges();
        }
        .instrument(span),
    );
}

/// A claim returned more tasks than slots: give the extras back at once.
pub(super) async fn release_excess<S: ExecutorStorage>(shared: &Arc<Shared<S>>, task: TaskRecord) {
    if let Some(lease) = task.lease() {
        write(shared, &lease, &mut Finish::Released).await;
    }
}

struct Outcome {
    finish: Finish,
    failed_attempt: bool,
}

async fn run<S: ExecutorStorage>(
    shared: &Arc<Shared<S>>,
    task: TaskRecord,
    claim_sent: Instant,
    slot: OwnedSemaphorePermit,
) {
    let Some(lease) = task.lease() else {
        tracing::error!(task.id = %task.id, state = %task.state, "store returned a claimed task without a lease; skipped");
        return;
    };
    let config = shared.config();
    let lease_expires = claim_sent + config.lease;
    if Instant::now() + config.heartbeat >= lease_expires {
        // The claim reply came so late (a paused process, a stalled store)
        // that the lease may run out before the first heartbeat: the task
        // may already be reaped and running elsewhere, so do not start it
        // (no two live attempts). Give the lease back if it is still ours.
        tracing::warn!(task.id = %task.id, waited = ?claim_sent.elapsed(), "claim arrived too late to start safely; releasing it");
        write(shared, &lease, &mut Finish::Released).await;
        return;
    }
    let cancel = CancellationToken::new();
    let kill = CancellationToken::new();
    let claimed_at = Instant::now();
    shared.in_flight().insert(
        task.id.clone(),
        InFlight {
            lease: lease.clone(),
            cancel: cancel.clone(),
            kill: kill.clone(),
            reason: None,
            lease_expires,
            finishing: false,
        },
    );
    let _entry = InFlightEntry { shared, id: task.id.clone(), fence: lease.fence };
    let listeners = shared.executor.client().listeners();
    let started_at = task.started_at.unwrap_or(task.due_at);
    m::started(&task.name, started_at.since(task.due_at));
    listeners.started(&task);

    let mut outcome = execute(shared, &task, &lease, cancel.clone(), kill).await;
    // Throughput history: the handler's Ok is a success, any other end of
    // a run (error, panic, timeout, retried or dead-lettered) a failure;
    // releases, cancels and give-backs ran nothing to count.
    match &outcome.finish {
        Finish::Completed => shared.count_attempt(&task.name, true),
        _ if outcome.failed_attempt => shared.count_attempt(&task.name, false),
        _ => {}
    }
    let reason = {
        let mut map = shared.in_flight();
        map.get_mut(&task.id).filter(|f| f.lease.fence == lease.fence).and_then(|f| {
            f.finishing = true;
            f.reason
        })
    };
    // Whatever ended the attempt, work the handler spawned is told to stop.
    cancel.cancel();
    let run_time = claimed_at.elapsed();
    // Nothing runs any more: the slot goes back to the claim loop while the
    // result is written (the lease stays in flight and renewed until then),
    // so the next claim overlaps this write instead of waiting for it.
    let _writing = Arc::clone(&shared.finishing).acquire_owned().await;
    drop(slot);
    shared.update_slot_gauges();

    let state = if reason == Some(StopReason::LeaseLost) {
        // Another worker may own the task now; a write would be refused.
        m::stale_fence();
        None
    } else {
        write(shared, &lease, &mut outcome.finish).await
    };

    if let Some(state) = state {
        // The task left RUNNING: a limited queue's slot is free now.
        shared.attempt_ended();
        let retried = matches!(outcome.finish, Finish::Retry { .. });
        m::finished(&task.name, state, outcome.failed_attempt, retried, run_time);
        if listeners.is_empty() {
            return;
        }
        let after = after(task, &outcome.finish, state);
        let error = outcome.finish.error().unwrap_or_default();
        match (&outcome.finish, state) {
            (Finish::Completed, _) => listeners.completed(&after),
            (Finish::Retry { delay, .. }, _) => {
                listeners.retry_scheduled(&after, error, crate::time::millis(*delay));
            }
            (Finish::Cancelled, _) => listeners.cancelled(&after.id),
            (_, s) if s.is_dead_letter() => listeners.dead_lettered(&after, s, error),
            _ => {}
        }
    }
}

/// The record as the store holds it after `finish` took it to `state`, for
/// listeners (which must see the state after the transition). Times are
/// this worker's clock; the store's record carries the store's.
fn after(mut rec: TaskRecord, finish: &Finish, state: TaskState) -> TaskRecord {
    let now = Timestamp::now_system();
    rec.state = state;
    rec.worker = None;
    rec.lease_until = None;
    match finish {
        Finish::Retry { delay, error } => {
            rec.due_at = now.saturating_add(*delay);
            rec.last_error = Some(error.clone());
        }
        Finish::Released => {
            rec.due_at = now;
            rec.attempts = rec.attempts.saturating_sub(1);
        }
        Finish::Postponed { delay, error } => {
            rec.due_at = now.saturating_add(*delay);
            rec.attempts = rec.attempts.saturating_sub(1);
            rec.last_error = Some(error.clone());
        }
        other => {
            rec.finished_at = Some(now);
            if let Some(error) = other.error() {
                rec.last_error = Some(error.to_owned());
            }
        }
    }
    rec
}

/// Marks, in a postponed task's error, when a worker first claimed it
/// without a handler: `[unknown since <store ms>]`. The grace counts from
/// there across workers and postponements, with no extra stored field.
const UNKNOWN_SINCE: &str = "[unknown since ";

fn unknown_since(last_error: Option<&str>) -> Option<Timestamp> {
    let text = last_error?;
    let rest = &text[text.rfind(UNKNOWN_SINCE)? + UNKNOWN_SINCE.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().map(Timestamp::from_millis)
}

/// A task this worker has no handler for. In a rolling deploy an older
/// binary claims tasks only the new one can run: the task goes back to the
/// queue, attempt not counted, with a delay that grows with the time it has
/// been unknown (a quarter of it, 1 s to 10 s), so the old worker does not
/// spin on it and a new one picks it up. Only after
/// `unknown_task_grace` without any worker running it does it end `ERROR`.
fn unknown_task<S: ExecutorStorage>(shared: &Arc<Shared<S>>, task: &TaskRecord) -> Outcome {
    let executor = &shared.executor;
    // The claim's store-clock instant.
    let now = task.started_at.unwrap_or(task.due_at);
    let since = unknown_since(task.last_error.as_deref()).filter(|s| *s <= now).unwrap_or(now);
    let unknown_for = now.since(since);
    let grace = shared.config().unknown_task_grace;
    let here = format!(
        "no handler registered for task name `{}` in worker {} (registered: {:?})",
        task.name,
        executor.worker_id(),
        executor.registry().names()
    );
    if unknown_for >= grace {
        m::unknown_task(&task.name, "dead_lettered");
        tracing::error!(task.id = %task.id, task.name = %task.name, ?unknown_for, "no worker has run this task name within the unknown-task grace: dead-lettered");
        return Outcome {
            finish: Finish::Errored {
                error: format!("{here}; no worker ran it for {unknown_for:?} (grace {grace:?})"),
            },
            failed_attempt: true,
        };
    }
    // A quarter of the time it has been unknown: a few quick returns while
    // the new binary rolls out, then every 10 s at most.
    let delay = (unknown_for / 4).clamp(Duration::from_secs(1), Duration::from_secs(10));
    m::unknown_task(&task.name, "postponed");
    tracing::warn!(
        task.id = %task.id,
        task.name = %task.name,
        ?delay,
        ?unknown_for,
        "no handler for this task name here (an older binary in a rolling deploy?): given back, attempt not counted"
    );
    Outcome {
        finish: Finish::Postponed {
            delay,
            error: format!("{here}; given back {UNKNOWN_SINCE}{}]", since.as_millis()),
        },
        failed_attempt: false,
    }
}

/// Runs the handler and decides how the attempt ends. Never panics: a
/// panicking handler is caught as a failed attempt (bad input never panics nor loses tasks).
async fn execute<S: ExecutorStorage>(
    shared: &Arc<Shared<S>>,
    task: &TaskRecord,
    lease: &Lease,
    cancel: CancellationToken,
    kill: CancellationToken,
) -> Outcome {
    let executor = &shared.executor;
    let dead = |finish: Finish| Outcome { finish, failed_attempt: true };
    let Some(handler) = executor.registry().get(&task.name) else {
        return unknown_task(shared, task);
    };
    let started = task.started_at.unwrap_or(task.due_at);
    let time_left = task.deadline.map(|d| d.since(started));
    if time_left == Some(Duration::ZERO) {
        return dead(Finish::TimedOut {
            error: format!("max_duration passed before attempt {} could start", task.attempts),
        });
    }
    let limit = match (task.timeout, time_left) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    };
    let deadline_binds = time_left.is_some() && limit == time_left;

    let on_limit = cancel.clone();
    let ctx = TaskContext {
        id: task.id.clone(),
        name: task.name.clone(),
        attempt: task.attempts,
        max_attempts: task.max_attempts,
        fence: lease.fence,
        deadline: task.deadline,
        cancel,
        data: Arc::clone(executor.data()),
        executor_stop: Some(shared.stop.clone()),
    };
    // Decoding and starting run user code (a `Deserialize` impl, the
    // handler's body up to its first await): a panic there is caught like
    // one inside the future, so the task never stays RUNNING (no neighbour harm).
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| handler.start(ctx, &task.payload))) {
        Ok(Ok(f)) => f,
        Ok(Err(reason)) => return dead(Finish::Errored { error: reason }),
        Err(panic) => {
            return dead(Finish::Errored {
                error: format!(
                    "panicked while decoding the payload or starting the handler: {}",
                    panic_message(panic)
                ),
            });
        }
    };
    let mut join = tokio::spawn(future);
    let run_start = Instant::now();
    let sleep = async {
        match limit {
            Some(l) => tokio::time::sleep(l).await,
            None => std::future::pending().await,
        }
    };
    let result: Result<(), TaskError> = tokio::select! {
        r = &mut join => match r {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(TaskError::retry(format!("handler panicked: {}", panic_message(e.into_panic())))),
            Err(_) => Err(TaskError::retry("handler task was aborted")),
        },
        () = sleep => {
            // The handler's token fires first, so work it spawned stops too.
            on_limit.cancel();
            join.abort();
            if deadline_binds {
                let max = task.deadline.unwrap_or_default().since(task.created_at);
                return dead(Finish::TimedOut { error: format!(
                    "ran past max_duration ({max:?} from creation); attempt {} ran {:?}",
                    task.attempts, run_start.elapsed()
                ) });
            }
            Err(TaskError::retry(format!("attempt timed out after {:?}", limit.unwrap_or_default())))
        },
        () = kill.cancelled() => {
            join.abort();
            Err(TaskError::retry("attempt stopped"))
        },
    };

    let reason = shared.in_flight().get(&task.id).and_then(|f| f.reason);
    match (result, reason) {
        (Ok(()), _) => Outcome { finish: Finish::Completed, failed_attempt: false },
        (Err(_), Some(StopReason::Shutdown)) => Outcome { finish: Finish::Released, failed_attempt: false },
        (Err(_), Some(StopReason::CancelRequested)) => {
            Outcome { finish: Finish::Cancelled, failed_attempt: false }
        }
        (Err(e), _) => {
            Outcome { finish: after_failure(shared, task, e, run_start.elapsed()), failed_attempt: true }
        }
    }
}

/// Retry by the task's policy, or dead letter when attempts or time run out.
fn after_failure<S: ExecutorStorage>(
    shared: &Arc<Shared<S>>,
    task: &TaskRecord,
    e: TaskError,
    ran: Duration,
) -> Finish {
    let error = e.message().to_owned();
    if e.action() == Action::Abort {
        return Finish::Failed { error };
    }
    if !task.attempts_left() {
        return Finish::Failed {
            error: format!("{error} (attempt {} of {})", task.attempts, task.max_attempts),
        };
    }
    let delay = match e.action() {
        Action::RetryAfter(d) => d,
        _ => {
            let handler_default =
                shared.executor.registry().get(&task.name).map(|h| &h.default_options().retry);
            let policy = task.retry.as_ref().or(handler_default);
            // A custom policy is user code: keep it inside the panic boundary.
            let computed = std::panic::catch_unwind(AssertUnwindSafe(|| match policy {
                Some(p) => p.delay(task.attempts),
                None => crate::RetryPolicy::default().delay(task.attempts),
            }));
            match computed {
                Ok(d) => d,
                Err(panic) => {
                    return Finish::Failed {
                        error: format!("{error}; the retry policy panicked: {}", panic_message(panic)),
                    };
                }
            }
        }
    };
    if delay > MAX_DURATION {
        return Finish::Failed {
            error: format!(
                "{error}; the retry delay {delay:?} is longer than the maximum of {} days, so the task \
                 is dead-lettered instead (requeue it to run it again)",
                MAX_DURATION.as_secs() / 86_400
            ),
        };
    }
    if let Some(deadline) = task.deadline {
        let next_start = task.started_at.unwrap_or(task.due_at).saturating_add(ran).saturating_add(delay);
        if next_start >= deadline {
            return Finish::TimedOut {
                error: format!("{error}; the next retry (in {delay:?}) would start past max_duration"),
            };
        }
    }
    Finish::Retry { delay, error }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// Writes the finish with the lease's fence, retrying store failures for
/// up to one lease; after that the leader reaps the task (at-least-once).
/// A finish the store refuses as invalid is written as `ERROR` with the
/// reason instead, so the task never waits for the reaper over bad input;
/// `finish` is updated to what was written.
async fn write<S: ExecutorStorage>(
    shared: &Arc<Shared<S>>,
    lease: &Lease,
    finish: &mut Finish,
) -> Option<TaskState> {
    let storage = shared.executor.client().storage_arc();
    let ns = shared.executor.namespace();
    let give_up = Instant::now() + shared.config().lease;
    let mut pause = Duration::from_millis(20);
    truncate_error(finish);
    loop {
        match storage.finish(ns, lease, finish.clone()).await {
            Ok(state) => return Some(state),
            Err(Error::StaleFence { .. }) => {
                m::stale_fence();
                tracing::warn!(task.id = %lease.id, fence = lease.fence, "lease lost before finishing; result refused");
                return None;
            }
            Err(e @ Error::Invalid { .. }) if !matches!(finish, Finish::Errored { .. }) => {
                tracing::error!(error = %e, task.id = %lease.id, "the store refused the attempt's result; recording ERROR");
                let was = finish.error().map(|t| format!("{t}; ")).unwrap_or_default();
                *finish = Finish::Errored { error: format!("{was}the store refused the result: {e}") };
                truncate_error(finish);
            }
            Err(e) if e.is_retryable() && Instant::now() < give_up => {
                tracing::warn!(error = %e, task.id = %lease.id, "finish failed; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            Err(e) => {
                tracing::error!(error = %e, task.id = %lease.id, "finish failed; the leader will reap the task after its lease");
                return None;
            }
        }
    }
}

/// Cuts an error text longer than [`MAX_ERROR_LEN`] at a character boundary.
fn truncate_error(finish: &mut Finish) {
    let text = match finish {
        Finish::Retry { error, .. }
        | Finish::Postponed { error, .. }
        | Finish::Failed { error }
        | Finish::TimedOut { error }
        | Finish::Errored { error } => error,
        _ => return,
    };
    if text.len() > MAX_ERROR_LEN {
        let mut end = MAX_ERROR_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = text.len() - end;
        text.truncate(end);
        text.push_str(&format!(" … ({cut} more bytes)"));
    }
}
