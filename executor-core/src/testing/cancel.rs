//! Checks of cancel and of requeue from the dead letter.

use std::time::Duration;

use crate::{
    Error, Namespace, TaskId, TaskState,
    query::CancelOutcome,
    queue::ClaimPlan,
    storage::{Due, Finish, Storage},
};

use super::{
    new_task,
    support::{LONG_LEASE, claim_only, err, lease, ok, record, submit, task_in_state, tid, worker},
};

fn assert_illegal(e: &Error, id: &TaskId, state: TaskState, action: &str) {
    assert!(
        matches!(e, Error::IllegalTransition { id: i, state: st, action: a } if i == id && *st == state && *a == action),
        "{action} of a {state} task: expected IllegalTransition, got {e:?}"
    );
}

/// Cancel of a waiting task (`CREATED`, delayed, or `PENDING` after a
/// retry): `CANCELLED` at once, finished_at set, never claimed.
pub async fn cancel_pending<S: Storage>(s: &S, ns: &Namespace) {
    let pending = task_in_state(s, ns, "cancel-pending", TaskState::Pending).await;
    let created = submit(s, ns, new_task("cancel-created")).await;
    let mut t = new_task("cancel-delayed");
    t.due = Due::After(Duration::from_secs(3_600));
    let delayed = submit(s, ns, t).await;
    for id in [&pending, &created, &delayed] {
        assert_eq!(ok("cancel", s.cancel(ns, id).await), CancelOutcome::Cancelled, "{id}");
        let c = record(s, ns, id).await;
        assert_eq!(c.state, TaskState::Cancelled, "{id}");
        assert!(c.finished_at.is_some(), "{id}: finished_at set");
    }
    assert!(
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "a cancelled task is not claimed"
    );
    let e = err("cancel twice", s.cancel(ns, &created).await);
    assert_illegal(&e, &created, TaskState::Cancelled, "cancel");
}

/// Cancel of a running task: `Requested`, the flag shows in the record and
/// in the next heartbeat (which still extends the lease); the worker then
/// finishes it `CANCELLED`.
pub async fn cancel_running_requested_and_delivered_by_heartbeat<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("cancel-running")).await;
    let rec = claim_only(s, ns, &id, Duration::from_secs(30)).await;
    assert_eq!(ok("cancel", s.cancel(ns, &id).await), CancelOutcome::Requested);
    let r = record(s, ns, &id).await;
    assert_eq!((r.state, r.cancel_requested), (TaskState::Running, true), "still running, flagged");
    let hb = ok("heartbeat", s.heartbeat(ns, &[lease(&rec)], LONG_LEASE).await);
    assert_eq!(hb.cancel_requested, vec![id.clone()], "the heartbeat delivers the cancel");
    assert!(hb.lost.is_empty(), "the lease is still current: {hb:?}");
    let r = record(s, ns, &id).await;
    assert!(r.lease_until > rec.lease_until, "a flagged lease is still extended");
    assert_eq!(
        ok("finish cancelled", s.finish(ns, &lease(&rec), Finish::Cancelled).await),
        TaskState::Cancelled
    );
    let c = record(s, ns, &id).await;
    assert_eq!(c.state, TaskState::Cancelled);
    assert!(c.finished_at.is_some(), "finished_at set");
    assert_eq!((c.worker, c.lease_until), (None, None));
}

/// Cancel of a finished task is an `IllegalTransition` and changes nothing.
pub async fn cancel_finished_is_illegal<S: Storage>(s: &S, ns: &Namespace) {
    for state in
        [TaskState::Completed, TaskState::Failed, TaskState::Timeout, TaskState::Error, TaskState::Cancelled]
    {
        let id = task_in_state(s, ns, &format!("cancel-{}", state.as_str().to_lowercase()), state).await;
        let before = record(s, ns, &id).await;
        let e = err("cancel of a finished task", s.cancel(ns, &id).await);
        assert_illegal(&e, &id, state, "cancel");
        assert_eq!(record(s, ns, &id).await, before, "a refused cancel changes nothing");
    }
}

/// Cancel of an unknown id is `NotFound`.
pub async fn cancel_missing_is_not_found<S: Storage>(s: &S, ns: &Namespace) {
    let id = tid("cancel-missing");
    let e = err("cancel missing", s.cancel(ns, &id).await);
    assert!(matches!(&e, Error::NotFound(i) if *i == id), "expected NotFound({id}), got {e:?}");
    assert!(ok("get", s.get(ns, &id).await).is_none(), "cancel creates nothing");
}

/// Requeue from `FAILED`, `TIMEOUT` and `ERROR`: `PENDING`, due now,
/// attempts 0, finished_at cleared, last_error kept, claimable at once.
pub async fn requeue_from_each_dead_letter_state<S: Storage>(s: &S, ns: &Namespace) {
    let mut requeued = Vec::new();
    for state in [TaskState::Failed, TaskState::Timeout, TaskState::Error] {
        requeued
            .push(task_in_state(s, ns, &format!("requeue-{}", state.as_str().to_lowercase()), state).await);
    }
    for id in &requeued {
        let dead = record(s, ns, id).await;
        ok("requeue", s.requeue(ns, id).await);
        let p = record(s, ns, id).await;
        assert_eq!(p.state, TaskState::Pending, "requeue from {}", dead.state);
        assert_eq!((p.attempts, p.finished_at), (0, None), "attempts reset, finished_at cleared");
        assert_eq!(p.last_error, dead.last_error, "the reason is kept");
        assert!(Some(p.due_at) >= dead.finished_at, "due now");
    }
    let mut claimed: Vec<_> =
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await)
            .into_iter()
            .map(|t| t.id)
            .collect();
    claimed.sort();
    requeued.sort();
    assert_eq!(claimed, requeued, "requeued tasks are due at once");
}

/// Requeue of a task outside the dead letter is an `IllegalTransition` and
/// changes nothing; of an unknown id `NotFound`.
pub async fn requeue_illegal_states<S: Storage>(s: &S, ns: &Namespace) {
    // CREATED last: the helper claims the one due task.
    for state in [
        TaskState::Pending,
        TaskState::Running,
        TaskState::Completed,
        TaskState::Cancelled,
        TaskState::Created,
    ] {
        let id = task_in_state(s, ns, &format!("requeue-{}", state.as_str().to_lowercase()), state).await;
        let before = record(s, ns, &id).await;
        let e = err("requeue", s.requeue(ns, &id).await);
        assert_illegal(&e, &id, state, "requeue");
        assert_eq!(record(s, ns, &id).await, before, "a refused requeue changes nothing");
    }
    let id = tid("requeue-missing");
    let e = err("requeue missing", s.requeue(ns, &id).await);
    assert!(matches!(&e, Error::NotFound(i) if *i == id), "expected NotFound({id}), got {e:?}");
}
