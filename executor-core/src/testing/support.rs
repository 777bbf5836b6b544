//! Small helpers shared by the checks: unwrap with context, and driving a
//! fresh task into a given state through the public `Storage` methods only.

use std::{fmt::Debug, time::Duration};

use crate::{
    Error, Namespace, Result, TaskId, TaskRecord, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Lease, NewTask, Storage},
};

use super::new_task;

/// The lease used when a check does not care about expiry.
pub(super) const LONG_LEASE: Duration = Duration::from_secs(60);

/// The value, or a panic saying which step failed and how.
#[track_caller]
pub(super) fn ok<T>(what: &str, r: Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("{what}: unexpected error: {e} ({e:?})"))
}

/// The error, or a panic saying the step should have failed.
#[track_caller]
pub(super) fn err<T: Debug>(what: &str, r: Result<T>) -> Error {
    match r {
        Ok(v) => panic!("{what}: expected an error, got Ok({v:?})"),
        Err(e) => e,
    }
}

/// A worker id for a check.
pub(super) fn worker() -> WorkerId {
    WorkerId::generate()
}

/// A valid task id.
#[track_caller]
pub(super) fn tid(id: &str) -> TaskId {
    TaskId::new(id).unwrap_or_else(|e| panic!("bad test id {id:?}: {e}"))
}

/// The record of a task that must exist.
pub(super) async fn record<S: Storage>(s: &S, ns: &Namespace, id: &TaskId) -> TaskRecord {
    ok(&format!("get {id}"), s.get(ns, id).await).unwrap_or_else(|| panic!("task {id} vanished"))
}

/// Submits `task` and expects a newly created task.
pub(super) async fn submit<S: Storage>(s: &S, ns: &Namespace, task: NewTask) -> TaskId {
    let id = task.id.clone();
    let out = ok(&format!("submit {id}"), s.submit(ns, task).await);
    assert_eq!(out.id, id, "submit of a new task must return its id");
    assert_eq!(out.outcome, crate::SubmitOutcome::Created, "submit of new task {id}");
    id
}

/// The lease of a claimed record.
#[track_caller]
pub(super) fn lease(rec: &TaskRecord) -> Lease {
    rec.lease().unwrap_or_else(|| panic!("claimed task {} has no lease: {rec:?}", rec.id))
}

/// Claims exactly one task and expects it to be `id`.
pub(super) async fn claim_only<S: Storage>(
    s: &S,
    ns: &Namespace,
    id: &TaskId,
    lease: Duration,
) -> TaskRecord {
    let mut got =
        ok(&format!("claim {id}"), s.claim(ns, &worker(), &ClaimPlan::default_queue(1), lease).await);
    match (got.pop(), got.is_empty()) {
        (Some(rec), true) if rec.id == *id => rec,
        (other, _) => panic!("claim: expected exactly task {id} to be due, got {other:?}"),
    }
}

/// Submits a fresh task and drives it into `state` through the public
/// methods. Claims with limit 1, so no other task of the namespace may be
/// due at the time (create `CREATED` ones last). Failures record `error`
/// as their reason.
pub(super) async fn task_in_state<S: Storage>(s: &S, ns: &Namespace, id: &str, state: TaskState) -> TaskId {
    let id = submit(s, ns, new_task(id)).await;
    let finish = match state {
        TaskState::Created => return id,
        TaskState::Cancelled => {
            ok("cancel", s.cancel(ns, &id).await);
            return id;
        }
        TaskState::Running => {
            claim_only(s, ns, &id, LONG_LEASE).await;
            return id;
        }
        TaskState::Pending => {
            Finish::Retry { delay: Duration::from_secs(3_600), error: format!("{id} retried") }
        }
        TaskState::Completed => Finish::Completed,
        TaskState::Failed => Finish::Failed { error: format!("{id} failed") },
        TaskState::Timeout => Finish::TimedOut { error: format!("{id} timed out") },
        TaskState::Error => Finish::Errored { error: format!("{id} errored") },
    };
    let rec = claim_only(s, ns, &id, LONG_LEASE).await;
    let reached = ok(&format!("finish {id} as {state}"), s.finish(ns, &lease(&rec), finish).await);
    assert_eq!(reached, state, "finish of {id} must return the new state");
    id
}
