//! Checks of the leader's housekeeping: reaping expired leases, retention
//! trim, and leadership itself.

use std::{sync::Mutex, time::Duration};

use crate::{
    Namespace, TaskId, TaskState, Timestamp,
    query::Retention,
    queue::ClaimPlan,
    storage::{Leadership, Storage},
};

use super::{
    new_task,
    support::{LONG_LEASE, claim_only, ok, record, submit, task_in_state, worker},
    wait_for, wait_until,
};

/// A lease that expires: `PENDING` (fence + 1, due now) with attempts
/// left, `FAILED` without, `TIMEOUT` past the deadline; live leases stay;
/// each reap returns at most `limit` tasks.
pub async fn reap_after_lease_expiry<S: Storage>(s: &S, ns: &Namespace) {
    let retried = submit(s, ns, new_task("reap-retried")).await;
    let mut t = new_task("reap-failed");
    t.max_attempts = 1;
    let failed = submit(s, ns, t).await;
    let mut t = new_task("reap-timeout");
    t.max_duration = Some(Duration::from_millis(100));
    let timed_out = submit(s, ns, t).await;
    let claimed =
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(3), Duration::from_millis(300)).await);
    assert_eq!(claimed.len(), 3, "the three due tasks");
    let live = submit(s, ns, new_task("reap-live")).await;
    claim_only(s, ns, &live, LONG_LEASE).await;

    let found = Mutex::new(crate::storage::Reaped::default());
    let found = &found;
    wait_until(Duration::from_secs(5), || async move {
        let r = ok("reap", s.reap(ns, 1).await);
        assert!(r.len() <= 1, "reap(limit 1) returned {r:?}");
        let mut all = found.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.retried.extend(r.retried);
        all.failed.extend(r.failed);
        all.timed_out.extend(r.timed_out);
        all.len() >= 3
    })
    .await;
    let all = found.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    assert_eq!(all.retried, vec![retried.clone()], "attempts left: back to PENDING ({all:?})");
    assert_eq!(all.failed, vec![failed.clone()], "no attempts left: FAILED ({all:?})");
    assert_eq!(all.timed_out, vec![timed_out.clone()], "past max_duration: TIMEOUT ({all:?})");

    for (id, state) in
        [(&retried, TaskState::Pending), (&failed, TaskState::Failed), (&timed_out, TaskState::Timeout)]
    {
        let r = record(s, ns, id).await;
        let before = claimed.iter().find(|c| c.id == *id).map_or(0, |c| c.fence);
        assert_eq!(r.state, state, "{id}");
        assert_eq!(r.fence, before + 1, "{id}: reap moves the fence on");
        assert_eq!((r.worker, r.lease_until), (None, None), "{id}: lease cleared");
        let reason = r.last_error.unwrap_or_default();
        assert!(reason.contains("lease expired"), "{id}: last_error {reason:?}");
        assert_eq!(r.finished_at.is_some(), state != TaskState::Pending, "{id}: finished_at");
    }
    assert_eq!(record(s, ns, &live).await.state, TaskState::Running, "a live lease is not reaped");
    assert!(ok("reap", s.reap(ns, 10).await).is_empty(), "nothing left to reap");
    let again = claim_only(s, ns, &retried, LONG_LEASE).await;
    assert_eq!(again.attempts, 2, "the reaped attempt counted");
}

/// Retention: `COMPLETED`/`CANCELLED` older than `completed` go, dead
/// letter is kept with `dead_letter: None` and goes when it is older than
/// `Some(d)`; waiting and running tasks never go; `limit` bounds a call.
pub async fn retention_trim<S: Storage>(s: &S, ns: &Namespace) {
    let mut done = Vec::new();
    for i in 0..3 {
        done.push(task_in_state(s, ns, &format!("trim-done-{i}"), TaskState::Completed).await);
    }
    done.push(task_in_state(s, ns, "trim-cancelled", TaskState::Cancelled).await);
    let dead = task_in_state(s, ns, "trim-failed", TaskState::Failed).await;
    let running = task_in_state(s, ns, "trim-running", TaskState::Running).await;
    let created = task_in_state(s, ns, "trim-created", TaskState::Created).await;

    let keep_all = Retention::default().completed(Duration::from_secs(3_600)).dead_letter(None);
    assert_eq!(ok("trim", s.trim(ns, &keep_all, 100).await), 0, "nothing is an hour old");
    // Retention counts strictly older than now - retention: wait until the
    // store's clock has passed the last finished_at.
    let mut last = Timestamp::from_millis(0);
    for id in done.iter().chain([&dead]) {
        last = last
            .max(record(s, ns, id).await.finished_at.unwrap_or_else(|| panic!("{id} has no finished_at")));
    }
    wait_for(Duration::from_secs(5), "the store clock to pass the last finish", || async {
        (ok("now", s.now(ns).await) > last).then_some(())
    })
    .await;
    let completed_only = Retention::default().completed(Duration::ZERO).dead_letter(None);
    assert_eq!(ok("trim limit 2", s.trim(ns, &completed_only, 2).await), 2, "limit bounds one call");
    assert_eq!(ok("trim", s.trim(ns, &completed_only, 100).await), 2, "the rest");
    assert_eq!(ok("trim", s.trim(ns, &completed_only, 100).await), 0, "nothing left");
    for id in &done {
        assert!(ok("get", s.get(ns, id).await).is_none(), "{id} should be trimmed");
    }
    assert_eq!(record(s, ns, &dead).await.state, TaskState::Failed, "dead letter kept with None");

    let everything = Retention::default().completed(Duration::ZERO).dead_letter(Some(Duration::ZERO));
    assert_eq!(ok("trim", s.trim(ns, &everything, 100).await), 1, "the dead letter goes with Some(0)");
    assert!(ok("get", s.get(ns, &dead).await).is_none());
    assert_eq!(record(s, ns, &running).await.state, TaskState::Running, "running tasks are never trimmed");
    assert_eq!(record(s, ns, &created).await.state, TaskState::Created, "waiting tasks are never trimmed");
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!(counts.total(), 2, "counts after trim: {counts:?}");
}

/// Finishes `ids` in `state` one store millisecond apart, so each has its
/// own `finished_at`, oldest first.
async fn finished_in_order<S: Storage>(
    s: &S,
    ns: &Namespace,
    prefix: &str,
    n: usize,
    state: TaskState,
) -> Vec<TaskId> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let id = task_in_state(s, ns, &format!("{prefix}-{i}"), state).await;
        let at = record(s, ns, &id).await.finished_at.unwrap_or_else(|| panic!("{id} has no finished_at"));
        wait_for(Duration::from_secs(5), "the store clock to pass a finish", || async {
            (ok("now", s.now(ns).await) > at).then_some(())
        })
        .await;
        ids.push(id);
    }
    ids
}

/// Retention by count: with `completed_max(2)` and `dead_letter_max(1)`
/// (and no age past), a trim keeps the 2 most recently finished completed
/// or cancelled tasks and the latest dead-lettered one, deletes the older
/// ones, bounded by `limit` per call, and never touches waiting or running
/// tasks. A cap above the count deletes nothing.
pub async fn retention_by_count<S: Storage>(s: &S, ns: &Namespace) {
    let done = finished_in_order(s, ns, "cap-done", 4, TaskState::Completed).await;
    let cancelled = task_in_state(s, ns, "cap-cancelled", TaskState::Cancelled).await;
    let dead = finished_in_order(s, ns, "cap-failed", 3, TaskState::Failed).await;
    let created = task_in_state(s, ns, "cap-created", TaskState::Created).await;
    let hour = Duration::from_secs(3_600);
    let generous =
        Retention::default().completed(hour).dead_letter(None).completed_max(100).dead_letter_max(100);
    assert_eq!(
        ok("trim under the caps", s.trim(ns, &generous, 100).await),
        0,
        "caps above the counts keep all"
    );

    let capped = Retention::default().completed(hour).dead_letter(None).completed_max(2).dead_letter_max(1);
    // 5 completed or cancelled (3 over the cap) and 3 dead (2 over): 5 go,
    // at most 2 per call.
    assert_eq!(ok("trim limit 2", s.trim(ns, &capped, 2).await), 2, "limit bounds one call");
    let mut removed = 2;
    for _ in 0..10 {
        let n = ok("trim", s.trim(ns, &capped, 2).await);
        if n == 0 {
            break;
        }
        removed += n;
    }
    assert_eq!(removed, 5, "3 completed and 2 dead-lettered tasks were over their caps");
    let kept = |id: &TaskId| {
        let id = id.clone();
        async move { ok("get", s.get(ns, &id).await).is_some() }
    };
    // The newest finished: the cancelled task, then the last completed one.
    assert!(kept(&cancelled).await, "the most recently finished (cancelled) task is kept");
    assert!(kept(&done[3]).await, "the second most recent completed task is kept");
    for id in &done[..3] {
        assert!(!kept(id).await, "{id}, older than the newest 2, should be trimmed");
    }
    assert!(kept(&dead[2]).await, "the latest dead-lettered task is kept");
    for id in &dead[..2] {
        assert!(!kept(id).await, "{id}, older than the latest dead letter, should be trimmed");
    }
    assert_eq!(record(s, ns, &created).await.state, TaskState::Created, "waiting tasks are never trimmed");
    assert_eq!(ok("trim again", s.trim(ns, &capped, 100).await), 0, "nothing left over the caps");
}

fn term_of(what: &str, t: Option<Leadership>) -> Leadership {
    t.unwrap_or_else(|| panic!("{what}: expected leadership, got None"))
}

/// Leadership: exclusive while held, renewed by its holder with the same
/// token, taken over after expiry with a larger token; a stale release
/// does nothing.
pub async fn leadership_exclusive_renew_release_takeover<S: Storage>(s: &S, ns: &Namespace) {
    let (w1, w2) = (worker(), worker());
    let ttl = Duration::from_millis(500);
    assert_eq!(ok("leader", s.leader(ns).await), None, "no leader at first");
    let t1 = term_of("first acquire", ok("acquire", s.acquire_leadership(ns, &w1, ttl).await));
    assert_eq!(t1.worker, w1);
    assert_eq!(ok("leader", s.leader(ns).await).map(|t| (t.worker, t.token)), Some((w1.clone(), t1.token)));
    assert_eq!(ok("acquire", s.acquire_leadership(ns, &w2, ttl).await), None, "held by another worker");

    let renewed = term_of("renew", ok("renew", s.acquire_leadership(ns, &w1, ttl).await));
    assert_eq!(renewed.token, t1.token, "a renewal keeps the token");
    assert!(renewed.until >= t1.until, "a renewal extends the term");
    let forged = Leadership { token: t1.token + 1_000, ..t1.clone() };
    ok("release", s.release_leadership(ns, &forged).await);
    assert_eq!(
        ok("leader", s.leader(ns).await).map(|t| t.token),
        Some(t1.token),
        "a wrong token frees nothing"
    );

    let w2_ref = &w2;
    let t2 =
        wait_for(Duration::from_secs(5), "leadership to expire and pass to another worker", || async move {
            ok("acquire", s.acquire_leadership(ns, w2_ref, Duration::from_secs(30)).await)
        })
        .await;
    assert_eq!(t2.worker, w2);
    assert!(t2.token > t1.token, "a new term has a larger token: {} after {}", t2.token, t1.token);
    assert_eq!(ok("acquire", s.acquire_leadership(ns, &w1, ttl).await), None, "the old leader is refused");
    ok("stale release", s.release_leadership(ns, &t1).await);
    assert_eq!(
        ok("leader", s.leader(ns).await).map(|t| t.worker),
        Some(w2.clone()),
        "a stale release does nothing"
    );

    ok("release", s.release_leadership(ns, &t2).await);
    assert_eq!(ok("leader", s.leader(ns).await), None, "released");
    let t3 = term_of("acquire after release", ok("acquire", s.acquire_leadership(ns, &w1, ttl).await));
    assert!(t3.token > t2.token, "tokens keep growing across releases");
    ok("release", s.release_leadership(ns, &t3).await);
}
