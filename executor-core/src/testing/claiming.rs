//! Checks of claim, finish, heartbeat and the fence (no two live attempts and no start before due).

use std::{collections::BTreeSet, time::Duration};

use crate::{
    Error, Namespace, TaskId, TaskState, Timestamp,
    queue::ClaimPlan,
    storage::{Due, Finish, Storage},
};

use super::{
    new_task,
    support::{LONG_LEASE, claim_only, err, lease, ok, record, submit, tid, worker},
    wait_for,
};

fn ids<'a>(tasks: impl IntoIterator<Item = &'a crate::TaskRecord>) -> BTreeSet<String> {
    tasks.into_iter().map(|t| t.id.to_string()).collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Claim takes the earliest due tasks first, at most `limit`, never a task
/// not yet due, and nothing with `limit` 0.
pub async fn claim_orders_by_due_and_respects_limit<S: Storage>(s: &S, ns: &Namespace) {
    let now = Timestamp::now_system();
    for (id, secs_ago) in [("o5", 5), ("o1", 1), ("o3", 3), ("o2", 2), ("o4", 4)] {
        let mut t = new_task(id);
        t.due = Due::At(now.saturating_sub(Duration::from_secs(secs_ago)));
        submit(s, ns, t).await;
    }
    let mut later = new_task("later");
    later.due = Due::After(Duration::from_secs(3_600));
    submit(s, ns, later).await;

    let me = worker();
    assert!(
        ok("claim 0", s.claim(ns, &me, &ClaimPlan::default_queue(0), LONG_LEASE).await).is_empty(),
        "claim with limit 0"
    );
    let first = ok("claim 3", s.claim(ns, &me, &ClaimPlan::default_queue(3), LONG_LEASE).await);
    assert_eq!(ids(&first), names(&["o5", "o4", "o3"]), "the three earliest due, at most the limit");
    let rest = ok("claim 10", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await);
    assert_eq!(ids(&rest), names(&["o2", "o1"]), "the remaining due tasks, not the later one");
    for t in first.iter().chain(&rest) {
        assert!(t.started_at >= Some(t.due_at), "{} claimed before due: {t:?}", t.id);
    }
    assert!(
        ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "nothing else is due"
    );
}

/// A claim makes the task `RUNNING` with fence + 1, attempts + 1,
/// started_at = now, the worker and lease_until = now + lease.
pub async fn claim_increments_fence_and_attempts<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("claim-fields")).await;
    let before = record(s, ns, &id).await;
    let me = worker();
    let lease_for = Duration::from_secs(30);
    let mut got = ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(1), lease_for).await);
    let rec = got.pop().unwrap_or_else(|| panic!("a due task was not claimed"));
    assert_eq!(rec.id, id);
    assert_eq!(rec.state, TaskState::Running);
    assert_eq!(rec.fence, before.fence + 1, "claim increments the fence");
    assert_eq!(rec.attempts, 1, "claim counts the attempt");
    let started = rec.started_at.unwrap_or_else(|| panic!("claimed task has no started_at"));
    assert!(started >= rec.created_at, "started_at {started} before created_at {}", rec.created_at);
    assert_eq!(rec.worker.as_ref(), Some(&me), "worker");
    assert_eq!(rec.lease_until, Some(started.saturating_add(lease_for)), "lease_until = now + lease");
    assert!(!rec.cancel_requested);
    let stored = record(s, ns, &id).await;
    assert_eq!(
        (stored.state, stored.fence, stored.attempts, stored.started_at, stored.lease_until),
        (rec.state, rec.fence, rec.attempts, rec.started_at, rec.lease_until),
        "get shows the claim"
    );
    assert_eq!(stored.worker, rec.worker);

    let retry = Finish::Retry { delay: Duration::ZERO, error: "again".to_owned() };
    assert_eq!(ok("retry", s.finish(ns, &lease(&rec), retry).await), TaskState::Pending);
    let second = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!((second.fence, second.attempts), (rec.fence + 1, 2), "second claim: fence and attempts grow");
}

/// Completing with the current fence: `COMPLETED`, finished_at set, lease cleared.
pub async fn complete_with_fence<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("complete")).await;
    let rec = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!(ok("complete", s.finish(ns, &lease(&rec), Finish::Completed).await), TaskState::Completed);
    let done = record(s, ns, &id).await;
    assert_eq!(done.state, TaskState::Completed);
    assert!(done.finished_at >= rec.started_at && done.finished_at.is_some(), "finished_at: {done:?}");
    assert_eq!((done.worker, done.lease_until), (None, None), "the lease is cleared");
    assert_eq!((done.attempts, done.fence, done.last_error), (1, rec.fence, None));
    assert!(
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "a completed task is not claimed"
    );
}

fn assert_stale(what: &str, e: &Error, id: &TaskId, fence: u64) {
    assert!(
        matches!(e, Error::StaleFence { id: i, fence: f } if i == id && *f == fence),
        "{what}: expected StaleFence {{ id: {id}, fence: {fence} }}, got {e:?}"
    );
}

/// A finish with a fence that is no longer current is refused with
/// `StaleFence` and changes nothing: after the task finished, after it was
/// claimed again, and after it was reaped (no two live attempts).
pub async fn stale_fence_refused<S: Storage>(s: &S, ns: &Namespace) {
    // After finish.
    let id = submit(s, ns, new_task("stale-finished")).await;
    let rec = claim_only(s, ns, &id, LONG_LEASE).await;
    ok("complete", s.finish(ns, &lease(&rec), Finish::Completed).await);
    let before = record(s, ns, &id).await;
    for finish in [Finish::Completed, Finish::Failed { error: "late".to_owned() }, Finish::Released] {
        let e = err("finish twice", s.finish(ns, &lease(&rec), finish).await);
        assert_stale("second finish", &e, &id, rec.fence);
    }
    assert_eq!(record(s, ns, &id).await, before, "a refused finish must not change the task");

    // After another claim.
    let id = submit(s, ns, new_task("stale-reclaimed")).await;
    let old = claim_only(s, ns, &id, LONG_LEASE).await;
    let retry = Finish::Retry { delay: Duration::ZERO, error: "again".to_owned() };
    ok("retry", s.finish(ns, &lease(&old), retry).await);
    let new = claim_only(s, ns, &id, LONG_LEASE).await;
    let before = record(s, ns, &id).await;
    let e = err("finish with the old attempt's lease", s.finish(ns, &lease(&old), Finish::Completed).await);
    assert_stale("old attempt", &e, &id, old.fence);
    assert_eq!(record(s, ns, &id).await, before, "the newer attempt is untouched");
    ok("current lease completes", s.finish(ns, &lease(&new), Finish::Completed).await);

    // After a reap.
    let id = submit(s, ns, new_task("stale-reaped")).await;
    let old = claim_only(s, ns, &id, Duration::from_millis(200)).await;
    wait_for(Duration::from_secs(5), "the expired lease to be reaped", || async {
        ok("reap", s.reap(ns, 10).await).retried.contains(&id).then_some(())
    })
    .await;
    let before = record(s, ns, &id).await;
    assert_eq!(
        (before.state, before.fence),
        (TaskState::Pending, old.fence + 1),
        "reaped: PENDING, fence + 1"
    );
    let e = err("finish after reap", s.finish(ns, &lease(&old), Finish::Completed).await);
    assert_stale("reaped attempt", &e, &id, old.fence);
    let hb = ok("heartbeat after reap", s.heartbeat(ns, &[lease(&old)], LONG_LEASE).await);
    assert_eq!(hb.lost, vec![id.clone()], "a reaped lease is reported lost");
    assert_eq!(record(s, ns, &id).await, before, "refused writes change nothing");
}

/// Retry: `PENDING`, due = now + delay, last_error kept, attempt counted,
/// not claimable before the delay.
pub async fn retry_moves_to_pending_with_delay<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("retry")).await;
    let rec = claim_only(s, ns, &id, LONG_LEASE).await;
    let delay = Duration::from_secs(10);
    let retry = Finish::Retry { delay, error: "boom".to_owned() };
    assert_eq!(ok("retry", s.finish(ns, &lease(&rec), retry).await), TaskState::Pending);
    let p = record(s, ns, &id).await;
    let started = rec.started_at.unwrap_or_default();
    assert_eq!(p.state, TaskState::Pending);
    assert!(
        p.due_at >= started.saturating_add(delay) && p.due_at <= started.saturating_add(delay * 7),
        "due_at {} is not now + {delay:?} (attempt started {started})",
        p.due_at
    );
    assert_eq!(p.last_error.as_deref(), Some("boom"));
    assert_eq!((p.attempts, p.finished_at, p.worker, p.lease_until), (1, None, None, None));
    assert!(
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "retried before its delay"
    );
}

/// Failed, TimedOut and Errored end in the dead letter (`FAILED`,
/// `TIMEOUT`, `ERROR`) with finished_at and the reason.
pub async fn fail_timeout_error_dead_letter<S: Storage>(s: &S, ns: &Namespace) {
    let cases = [
        ("dl-failed", Finish::Failed { error: "no luck".to_owned() }, TaskState::Failed),
        ("dl-timeout", Finish::TimedOut { error: "too slow".to_owned() }, TaskState::Timeout),
        ("dl-error", Finish::Errored { error: "bad payload".to_owned() }, TaskState::Error),
    ];
    for (name, finish, state) in cases {
        let id = submit(s, ns, new_task(name)).await;
        let rec = claim_only(s, ns, &id, LONG_LEASE).await;
        let reason = finish.error().map(str::to_owned);
        assert_eq!(ok("finish", s.finish(ns, &lease(&rec), finish).await), state, "{name}");
        let d = record(s, ns, &id).await;
        assert_eq!(d.state, state, "{name}");
        assert!(d.finished_at.is_some() && d.finished_at >= rec.started_at, "{name}: finished_at {d:?}");
        assert_eq!(d.last_error, reason, "{name}: the reason is kept");
        assert_eq!((d.worker, d.lease_until), (None, None), "{name}: lease cleared");
    }
    assert!(
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "dead letter is not claimed"
    );
}

/// Released (shutdown): `PENDING`, due now, the attempt not counted.
pub async fn release_does_not_count_attempt<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("release")).await;
    let rec = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!(ok("release", s.finish(ns, &lease(&rec), Finish::Released).await), TaskState::Pending);
    let p = record(s, ns, &id).await;
    assert_eq!((p.state, p.attempts, p.worker, p.lease_until), (TaskState::Pending, 0, None, None));
    assert!(Some(p.due_at) >= rec.started_at, "due now, not in the past");
    let again = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!((again.attempts, again.fence), (1, rec.fence + 1), "reclaimed at once");
}

/// Postponed (no handler here, e.g. a rolling deploy): `PENDING`, due after
/// the delay and not before, the attempt not counted, the reason recorded;
/// a stale fence is refused like any finish.
pub async fn postpone_does_not_count_attempt<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("postpone")).await;
    let rec = claim_only(s, ns, &id, LONG_LEASE).await;
    let postpone =
        Finish::Postponed { delay: Duration::from_secs(3_600), error: "no handler here".to_owned() };
    assert_eq!(ok("postpone", s.finish(ns, &lease(&rec), postpone.clone()).await), TaskState::Pending);
    let p = record(s, ns, &id).await;
    assert_eq!((p.state, p.attempts, p.worker.clone(), p.lease_until), (TaskState::Pending, 0, None, None));
    assert_eq!(p.last_error.as_deref(), Some("no handler here"));
    let started = rec.started_at.unwrap_or_else(|| panic!("{id}: a claimed task has started_at"));
    assert!(p.due_at >= started.saturating_add(Duration::from_secs(3_599)), "due an hour later: {p:?}");
    assert!(
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "not claimable before its delay"
    );
    let e = err("postpone again", s.finish(ns, &lease(&rec), postpone).await);
    assert!(matches!(e, Error::StaleFence { .. } | Error::IllegalTransition { .. }), "{e:?}");
}

/// Heartbeat extends current leases to now + lease and reports lost ones
/// (wrong fence, finished, missing) without touching them.
pub async fn heartbeat_extends_and_reports_lost<S: Storage>(s: &S, ns: &Namespace) {
    let short = Duration::from_secs(5);
    let a = submit(s, ns, new_task("hb-a")).await;
    let b = submit(s, ns, new_task("hb-b")).await;
    let mut claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(2), short).await);
    claimed.sort_by(|x, y| x.id.cmp(&y.id));
    let [ra, rb] =
        <[_; 2]>::try_from(claimed).unwrap_or_else(|c| panic!("expected hb-a and hb-b, got {c:?}"));
    assert_eq!((&ra.id, &rb.id), (&a, &b));
    let done = submit(s, ns, new_task("hb-done")).await;
    let rd = claim_only(s, ns, &done, LONG_LEASE).await;
    ok("complete", s.finish(ns, &lease(&rd), Finish::Completed).await);

    let mut wrong = lease(&rb);
    wrong.fence += 1;
    let mut missing = lease(&ra);
    missing.id = tid("hb-missing");
    let long = Duration::from_secs(120);
    let hb = ok("heartbeat", s.heartbeat(ns, &[lease(&ra), wrong, lease(&rd), missing], long).await);
    let lost: BTreeSet<_> = hb.lost.iter().map(|i| i.to_string()).collect();
    assert_eq!(lost, names(&["hb-b", "hb-done", "hb-missing"]), "lost leases");
    assert!(hb.cancel_requested.is_empty(), "no cancel was asked");
    let ea = record(s, ns, &a).await;
    let started = ra.started_at.unwrap_or_default();
    assert!(ea.lease_until >= Some(started.saturating_add(long)), "lease extended to now + lease: {ea:?}");
    assert_eq!((ea.state, ea.fence), (TaskState::Running, ra.fence));
    assert_eq!(record(s, ns, &b).await.lease_until, rb.lease_until, "a wrong fence extends nothing");
}

/// `finish_many` answers every item in order, each on its own: a stale
/// lease is refused without stopping the others.
pub async fn finish_many_answers_each_item<S: Storage>(s: &S, ns: &Namespace) {
    for id in ["fm-a", "fm-b", "fm-c"] {
        submit(s, ns, new_task(id)).await;
    }
    let mut claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(3), LONG_LEASE).await);
    claimed.sort_by(|x, y| x.id.cmp(&y.id));
    let [a, b, c] =
        <[_; 3]>::try_from(claimed).unwrap_or_else(|c| panic!("expected fm-a, fm-b, fm-c, got {c:?}"));
    let mut stale = lease(&b);
    stale.fence += 1;
    let retry = Finish::Retry { delay: Duration::ZERO, error: "again".to_owned() };
    let items = vec![(lease(&a), Finish::Completed), (stale, Finish::Completed), (lease(&c), retry)];
    let out = ok("finish_many", s.finish_many(ns, items).await);
    assert_eq!(out.len(), 3, "one answer per item: {out:?}");
    let mut out = out.into_iter();
    assert!(matches!(out.next(), Some(Ok(TaskState::Completed))), "fm-a completes");
    let refused = out.next();
    assert!(matches!(&refused, Some(Err(Error::StaleFence { id, .. })) if *id == b.id), "fm-b: {refused:?}");
    assert!(matches!(out.next(), Some(Ok(TaskState::Pending))), "fm-c retries");
    assert_eq!(record(s, ns, &a.id).await.state, TaskState::Completed);
    assert_eq!(record(s, ns, &b.id).await.state, TaskState::Running, "a refused item changes nothing");
    assert_eq!(record(s, ns, &c.id).await.state, TaskState::Pending);
}

/// `finish_many` of `Completed` items only, where one lease is stale, one
/// task is unknown and one task is named twice: the others complete, and
/// each of those three gets its own refusal (`StaleFence`, or `NotFound`
/// for the unknown one) (a backend that completes such a
/// batch in one statement must notice and answer item by item).
pub async fn finish_many_completed_with_a_stale_item<S: Storage>(s: &S, ns: &Namespace) {
    let ids = ["fc-a", "fc-b", "fc-c", "fc-d"];
    for id in ids {
        submit(s, ns, new_task(id)).await;
    }
    let mut claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(4), LONG_LEASE).await);
    claimed.sort_by(|x, y| x.id.cmp(&y.id));
    let [a, b, c, d] =
        <[_; 4]>::try_from(claimed).unwrap_or_else(|c| panic!("expected fc-a..fc-d, got {c:?}"));
    let mut stale = lease(&b);
    stale.fence += 1;
    let mut gone = lease(&d);
    gone.id = tid("fc-never-submitted");
    let items = vec![
        (lease(&a), Finish::Completed),
        (stale, Finish::Completed),
        (lease(&c), Finish::Completed),
        (gone, Finish::Completed),
        (lease(&c), Finish::Completed),
        (lease(&d), Finish::Completed),
    ];
    let out = ok("finish_many", s.finish_many(ns, items).await);
    assert_eq!(out.len(), 6, "one answer per item: {out:?}");
    assert!(matches!(out[0], Ok(TaskState::Completed)), "fc-a completes: {out:?}");
    assert!(matches!(&out[1], Err(Error::StaleFence { id, .. }) if *id == b.id), "fc-b is stale: {out:?}");
    assert!(matches!(out[2], Ok(TaskState::Completed)), "fc-c completes: {out:?}");
    assert!(
        matches!(&out[3], Err(Error::StaleFence { .. } | Error::NotFound(_))),
        "an unknown id is refused: {out:?}"
    );
    assert!(matches!(&out[4], Err(Error::StaleFence { .. })), "fc-c's second finish is stale: {out:?}");
    assert!(matches!(out[5], Ok(TaskState::Completed)), "fc-d completes: {out:?}");
    assert_eq!(record(s, ns, &b.id).await.state, TaskState::Running, "a refused item changes nothing");
    for t in [&a, &c, &d] {
        assert_eq!(record(s, ns, &t.id).await.state, TaskState::Completed, "{}", t.id);
    }
}
