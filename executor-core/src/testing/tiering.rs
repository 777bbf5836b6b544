//! Checks of the tier methods (`now`, `due_before`, `import`, `remove`) a
//! store implements to serve as a tier of `TieredStorage`.

use std::time::Duration;

use crate::{
    Namespace, TaskState,
    queue::ClaimPlan,
    storage::{Due, Finish, TierStorage},
};

use super::{
    new_task,
    support::{LONG_LEASE, ok, tid, worker},
};

/// `due_before` lists waiting tasks due before the bound, earliest first,
/// within the limit, and changes nothing.
pub async fn tier_due_before_lists_waiting_tasks<S: TierStorage>(s: &S, ns: &Namespace) {
    let now = ok("now", s.now(ns).await);
    for (id, secs) in [("far", 3_600), ("near", 10), ("mid", 60)] {
        let mut t = new_task(id);
        t.due = Due::After(Duration::from_secs(secs));
        ok("submit", s.submit(ns, t).await);
    }
    ok("submit running", s.submit(ns, new_task("running")).await);
    let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(1), LONG_LEASE).await);
    assert_eq!(claimed.len(), 1, "the due task is claimed");
    let bound = now.saturating_add(Duration::from_secs(120));
    let listed = ok("due_before", s.due_before(ns, bound, 10).await);
    let ids: Vec<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["near", "mid"], "waiting tasks before the bound, earliest first");
    let limited = ok("due_before limit 1", s.due_before(ns, bound, 1).await);
    assert_eq!(limited.len(), 1);
    let still = ok("get", s.get(ns, &tid("near")).await).map(|r| r.state);
    assert_eq!(still, Some(TaskState::Created), "due_before changes nothing");
}

/// `import` stores a record as given (its attempt log too), once; a second
/// import is a no-op; `due_before` reads the attempt log back.
pub async fn tier_import_is_idempotent_by_id<S: TierStorage>(s: &S, ns: &Namespace) {
    ok("submit", s.submit(ns, new_task("moving")).await);
    let w = worker();
    let claimed = ok("claim", s.claim(ns, &w, &ClaimPlan::default_queue(1), LONG_LEASE).await);
    let lease = claimed.first().and_then(|r| r.lease()).unwrap_or_else(|| panic!("claimed task has a lease"));
    ok(
        "retry",
        s.finish(ns, &lease, Finish::Retry { delay: Duration::from_secs(600), error: "later".into() }).await,
    );
    let record = ok("get", s.get(ns, &tid("moving")).await).unwrap_or_else(|| panic!("task exists"));

    // Import into a second namespace of the same store stands in for another tier.
    let other = Namespace::new(format!("{}-tier", ns.as_str()).chars().take(64).collect::<String>())
        .unwrap_or_else(|e| panic!("namespace: {e}"));
    assert!(ok("import", s.import(&other, record.clone()).await), "first import stores the record");
    assert!(!ok("import again", s.import(&other, record.clone()).await), "second import is a no-op");
    let copy = ok("get copy", s.get(&other, &record.id).await).unwrap_or_else(|| panic!("imported"));
    assert_eq!(copy.state, TaskState::Pending);
    assert_eq!((copy.attempts, copy.fence, copy.due_at), (record.attempts, record.fence, record.due_at));
    assert_eq!(copy.last_error, record.last_error);
    assert_eq!(copy.payload, record.payload);
    assert_eq!(record.attempt_log.len(), 1, "the retried attempt is logged: {:?}", record.attempt_log);
    assert_eq!(copy.attempt_log, record.attempt_log, "the attempt log moves with the task");
    let due = ok(
        "due_before in copy",
        s.due_before(&other, record.due_at.saturating_add(Duration::from_millis(1)), 10).await,
    );
    assert_eq!(due.len(), 1, "an imported waiting task is indexed by due time");
    assert_eq!(due[0].attempt_log, record.attempt_log, "due_before reads the attempt log too");
    ok("remove copy", s.remove(&other, &record.id, record.fence).await);
}

/// `remove` deletes only a waiting task with the given fence.
pub async fn tier_remove_needs_waiting_and_fence<S: TierStorage>(s: &S, ns: &Namespace) {
    ok("submit", s.submit(ns, new_task("gone")).await);
    let record = ok("get", s.get(ns, &tid("gone")).await).unwrap_or_else(|| panic!("exists"));
    assert!(!ok("remove wrong fence", s.remove(ns, &record.id, record.fence + 1).await));
    assert!(ok("remove", s.remove(ns, &record.id, record.fence).await));
    assert!(ok("get", s.get(ns, &record.id).await).is_none(), "removed");
    assert!(!ok("remove missing", s.remove(ns, &record.id, record.fence).await));

    ok("submit running", s.submit(ns, new_task("busy")).await);
    let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(1), LONG_LEASE).await);
    let fence = claimed.first().map(|r| r.fence).unwrap_or_default();
    assert!(!ok("remove running", s.remove(ns, &tid("busy"), fence).await), "a running task stays");
    assert!(ok("get", s.get(ns, &tid("busy")).await).is_some());
}
