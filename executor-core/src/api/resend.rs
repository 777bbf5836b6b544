//! Sending a submit again when its outcome was lost: the defaults of
//! [`Client::submit_retry`](crate::Client::submit_retry).
//!
//! The store may have stored the task and its answer never arrived
//! ([`Error::OutcomeUnknown`]). [`crate::Client`] resends the same submit
//! ([`NewTask::resend`]: same id, same nonce) a bounded number of times, so
//! a store answers `Created` whether or not the lost try stored the task,
//! and the task exists once.

use std::time::Duration;

use crate::{
    Error, Namespace, Result, Submitted, TaskId,
    storage::{NewTask, Storage},
};

/// Default of [`crate::Client::submit_retry`]: sends of one submit in all.
pub const DEFAULT_SUBMIT_TRIES: u32 = 3;

/// Default of [`crate::Client::submit_retry`]: the pause before the first
/// resend; each next one waits twice as long.
pub const DEFAULT_SUBMIT_PAUSE: Duration = Duration::from_millis(100);

/// The longest pause between two sends, however many tries.
const MAX_PAUSE: Duration = Duration::from_secs(10);

/// How a submit whose outcome was lost is sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resend {
    /// Sends in all, at least 1.
    tries: u32,
    /// Before the first resend.
    pause: Duration,
}

impl Default for Resend {
    fn default() -> Self {
        Self { tries: DEFAULT_SUBMIT_TRIES, pause: DEFAULT_SUBMIT_PAUSE }
    }
}

/// After an unknown outcome, whether `e` leaves the question open (the
/// resend did not reach the store, or lost its answer too), so the submit
/// is still unknown; and whether another try may settle it. Every other
/// answer settles it: a task, or an error the store gave for the task
/// itself (`DuplicateId`: another submit owns the id).
fn still_open(e: &Error) -> Option<bool> {
    match e {
        Error::OutcomeUnknown { .. } | Error::Timeout(_) => Some(true),
        Error::Storage { retryable, .. } => Some(*retryable),
        _ => None,
    }
}

/// `e`, met after the submit of `id` had an unknown outcome, as that
/// outcome: still unknown, with `e` as the reason.
fn unknown(id: &TaskId, e: Error) -> Error {
    match e {
        e @ Error::OutcomeUnknown { .. } => e,
        Error::Storage { source, .. } => Error::outcome_unknown(id.clone(), source),
        other => Error::outcome_unknown(id.clone(), other),
    }
}

impl Resend {
    pub(crate) fn new(tries: u32, pause: Duration) -> Self {
        Self { tries: tries.max(1), pause: pause.min(MAX_PAUSE) }
    }

    /// The pause before resend `n` (1 for the first).
    fn pause(self, n: u32) -> Duration {
        self.pause.saturating_mul(1 << (n - 1).min(16)).min(MAX_PAUSE)
    }

    /// Submits `task`; while the answer is an unknown outcome, waits and
    /// sends the same submit again, up to the bound.
    pub(crate) async fn submit<S: Storage>(
        self,
        storage: &S,
        ns: &Namespace,
        task: NewTask,
    ) -> Result<Submitted> {
        if self.tries <= 1 {
            return storage.submit(ns, task).await;
        }
        let mut last = match storage.submit(ns, task.resend()).await {
            Err(e @ Error::OutcomeUnknown { .. }) => e,
            other => return other,
        };
        for n in 1..self.tries {
            tokio::time::sleep(self.pause(n)).await;
            tracing::debug!(
                task = %task.id,
                error = %last,
                attempt = n + 1,
                "the submit's outcome is unknown; sending it again"
            );
            match storage.submit(ns, task.resend()).await {
                Err(e) => match still_open(&e) {
                    Some(again) => {
                        last = e;
                        if !again {
                            break;
                        }
                    }
                    None => return Err(e),
                },
                ok => return ok,
            }
        }
        Err(unknown(&task.id, last))
    }

    /// Submits `tasks` in one `submit_many` call; the tasks whose outcome
    /// is unknown are sent again together, as [`Resend::submit`] does for
    /// one. One answer per task, in order.
    pub(crate) async fn submit_many<S: Storage>(
        self,
        storage: &S,
        ns: &Namespace,
        tasks: Vec<NewTask>,
    ) -> Vec<Result<Submitted>> {
        if self.tries <= 1 {
            let ids: Vec<TaskId> = tasks.iter().map(|t| t.id.clone()).collect();
            return answers(storage.submit_many(ns, tasks).await, &ids);
        }
        let mut out: Vec<Option<Result<Submitted>>> = tasks.iter().map(|_| None).collect();
        // The tasks still to send, and whether each one's outcome was lost.
        let mut pending: Vec<(usize, bool)> = (0..tasks.len()).map(|i| (i, false)).collect();
        for n in 0..self.tries {
            if n > 0 {
                tokio::time::sleep(self.pause(n)).await;
                tracing::debug!(
                    tasks = pending.len(),
                    attempt = n + 1,
                    "submits' outcomes are unknown; sending them again"
                );
            }
            let batch: Vec<NewTask> = pending.iter().map(|&(i, _)| tasks[i].resend()).collect();
            let ids: Vec<TaskId> = batch.iter().map(|t| t.id.clone()).collect();
            let got = answers(storage.submit_many(ns, batch).await, &ids);
            let mut next = Vec::new();
            for ((i, lost), answer) in pending.into_iter().zip(got) {
                match answer {
                    Err(e @ Error::OutcomeUnknown { .. }) => {
                        out[i] = Some(Err(e));
                        next.push((i, true));
                    }
                    Err(e) if lost => match still_open(&e) {
                        Some(again) => {
                            out[i] = Some(Err(unknown(&tasks[i].id, e)));
                            if again {
                                next.push((i, true));
                            }
                        }
                        None => out[i] = Some(Err(e)),
                    },
                    other => out[i] = Some(other),
                }
            }
            pending = next;
            if pending.is_empty() {
                break;
            }
        }
        out.into_iter()
            .map(|a| a.unwrap_or_else(|| Err(Error::storage("no answer for a task", false))))
            .collect()
    }
}

/// One answer per task of a `submit_many` call: its own, or the whole
/// call's error. The whole call's error means the store was not reached
/// (a retryable or not [`Error::Storage`] for each), unless it is an
/// unknown outcome: then each task gets its own, with its id.
fn answers(result: Result<Vec<Result<Submitted>>>, ids: &[TaskId]) -> Vec<Result<Submitted>> {
    match result {
        Ok(answers) if answers.len() == ids.len() => answers,
        Ok(answers) => {
            let reason = format!("the store answered {} of {} tasks", answers.len(), ids.len());
            ids.iter().map(|_| Err(Error::storage(reason.clone(), false))).collect()
        }
        Err(e) => {
            let (reason, retryable) = match &e {
                Error::Storage { source, retryable } => (source.to_string(), *retryable),
                Error::OutcomeUnknown { source, .. } => (source.to_string(), true),
                other => (other.to_string(), other.is_retryable()),
            };
            let lost = matches!(e, Error::OutcomeUnknown { .. });
            ids.iter()
                .map(|id| {
                    if lost {
                        Err(Error::outcome_unknown(id.clone(), reason.clone()))
                    } else {
                        Err(Error::storage(reason.clone(), retryable))
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests;
