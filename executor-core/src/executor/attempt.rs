//! One attempt: find the handler, decode, run under the time limit, catch
//! panics, and write the result with the lease's fence.

use std::{sync::Arc, time::Duration};

use tokio::{sync::OwnedSemaphorePermit, time::Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::run::{InFlight, Shared, StopReason};
use crate::{
    Action, Error, Finish, Lease, Storage, TaskContext, TaskError, TaskRecord, TaskState, metrics as m,
};

pub(super) fn spawn<S: Storage>(
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
            run(&shared_for_task, task, claim_sent).await;
            drop(permit);
            shared_for_task.update_slot_gauges();
        }
        .instrument(span),
    );
}

/// A claim returned more tasks than slots: give the extras back at once.
pub(super) async fn release_excess<S: Storage>(shared: &Arc<Shared<S>>, task: TaskRecord) {
    if let Some(lease) = task.lease() {
        write(shared, &lease, Finish::Released).await;
    }
}

struct Outcome {
    finish: Finish,
    failed_attempt: bool,
}

async fn run<S: Storage>(shared: &Arc<Shared<S>>, task: TaskRecord, claim_sent: Instant) {
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
        // (invariant 2). Give the lease back if it is still ours.
        tracing::warn!(task.id = %task.id, waited = ?claim_sent.elapsed(), "claim arrived too late to start safely; releasing it");
        write(shared, &lease, Finish::Released).await;
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
        },
    );
    let listeners = shared.executor.client().listeners();
    let started_at = task.started_at.unwrap_or(task.due_at);
    m::started(&task.name, started_at.since(task.due_at));
    listeners.started(&task);

    let outcome = execute(shared, &task, &lease, cancel, kill).await;
    let reason = shared.in_flight().get(&task.id).and_then(|f| f.reason);
    let run_time = claimed_at.elapsed();

    let state = if reason == Some(StopReason::LeaseLost) {
        // Another worker may own the task now; a write would be refused.
        m::stale_fence();
        None
    } else {
        write(shared, &lease, outcome.finish.clone()).await
    };
    shared.in_flight().remove(&task.id);

    if let Some(state) = state {
        m::finished(&task.name, state, outcome.failed_attempt, run_time);
        let error = outcome.finish.error().unwrap_or_default();
        match (&outcome.finish, state) {
            (Finish::Completed, _) => listeners.completed(&task),
            (Finish::Retry { delay, .. }, _) => {
                listeners.retry_scheduled(&task, error, crate::time::millis(*delay));
            }
            (Finish::Cancelled, _) => listeners.cancelled(&task.id),
            (_, s) if s.is_dead_letter() => listeners.dead_lettered(&task, s, error),
            _ => {}
        }
    }
}

/// Runs the handler and decides how the attempt ends. Never panics: a
/// panicking handler is caught as a failed attempt (invariant 6).
async fn execute<S: Storage>(
    shared: &Arc<Shared<S>>,
    task: &TaskRecord,
    lease: &Lease,
    cancel: CancellationToken,
    kill: CancellationToken,
) -> Outcome {
    let executor = &shared.executor;
    let dead = |finish: Finish| Outcome { finish, failed_attempt: true };
    let Some(handler) = executor.registry().get(&task.name) else {
        return dead(Finish::Errored {
            error: format!(
                "no handler registered for task name `{}` in worker {} (registered: {:?})",
                task.name,
                executor.worker_id(),
                executor.registry().names()
            ),
        });
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

    let ctx = TaskContext {
        id: task.id.clone(),
        name: task.name.clone(),
        attempt: task.attempts,
        max_attempts: task.max_attempts,
        fence: lease.fence,
        deadline: task.deadline,
        cancel,
    };
    let future = match handler.start(ctx, &task.payload) {
        Ok(f) => f,
        Err(reason) => return dead(Finish::Errored { error: reason }),
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
fn after_failure<S: Storage>(
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
            match (&task.retry, handler_default) {
                (Some(p), _) => p.delay(task.attempts),
                (None, Some(p)) => p.delay(task.attempts),
                (None, None) => crate::RetryPolicy::default().delay(task.attempts),
            }
        }
    };
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
async fn write<S: Storage>(shared: &Arc<Shared<S>>, lease: &Lease, finish: Finish) -> Option<TaskState> {
    let storage = shared.executor.client().storage_arc();
    let ns = shared.executor.namespace();
    let give_up = Instant::now() + shared.config().lease;
    let mut pause = Duration::from_millis(20);
    loop {
        match storage.finish(ns, lease, finish.clone()).await {
            Ok(state) => return Some(state),
            Err(Error::StaleFence { .. }) => {
                m::stale_fence();
                tracing::warn!(task.id = %lease.id, fence = lease.fence, "lease lost before finishing; result refused");
                return None;
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
