//! Checks of tasks submitted alone under an id generated for them
//! ([`NewTask::with_generated_id`], what `TaskBuilder` sends without
//! `.id(..)`), the submit a request handler awaits: a store may send a lone
//! submit by a shorter path than a batch, and every read, change and claim
//! must see the task exactly as if it had been created by any other.

use std::time::Duration;

use serde_json::json;

use crate::{
    ListQuery, Namespace, RetryPolicy, SubmitOutcome, TaskId, TaskState, Timestamp,
    query::CancelOutcome,
    queue::ClaimPlan,
    storage::{Due, Finish, NewTask, Storage},
};

use super::{
    support::{LONG_LEASE, lease, ok, record, worker},
    wait_for,
};

/// A task under a generated id, as the builder sends it.
fn fresh(n: u32) -> NewTask {
    NewTask::with_generated_id("fresh", json!({ "n": n }).to_string().into_bytes())
}

/// Submits `task` alone and expects it created under its own id.
async fn submit_fresh<S: Storage>(s: &S, ns: &Namespace, task: NewTask) -> TaskId {
    assert!(task.id.is_generated(), "the check's task must carry a generated id");
    let id = task.id.clone();
    let out = ok(&format!("submit {id}"), s.submit(ns, task).await);
    assert_eq!(
        (out.id.clone(), out.outcome),
        (id.clone(), SubmitOutcome::Created),
        "submit of fresh task {id}"
    );
    id
}

/// Read back at once, the task has every field it was submitted with: by
/// `get`, in the counts, in a listing, with its creation time no later
/// than the store's clock.
pub async fn fresh_id_submit_reads_back<S: Storage>(s: &S, ns: &Namespace) {
    let mut task = fresh(7);
    task.max_attempts = 4;
    task.max_duration = Some(Duration::from_secs(60));
    task.timeout = Some(Duration::from_secs(5));
    task.retry = Some(RetryPolicy::fixed(Duration::from_secs(2)));
    let id = submit_fresh(s, ns, task).await;
    let bare = submit_fresh(s, ns, fresh(8)).await;
    let store_now = ok("now", s.now(ns).await);

    let rec = record(s, ns, &id).await;
    assert_eq!((rec.name.as_str(), rec.state), ("fresh", TaskState::Created), "{rec:?}");
    assert_eq!(rec.payload, br#"{"n":7}"#.to_vec(), "payload");
    assert_eq!((rec.attempts, rec.max_attempts), (0, 4), "attempts");
    assert!(rec.created_at <= store_now, "created at {} after the store's now {store_now}", rec.created_at);
    let skew = Duration::from_secs(60);
    assert!(
        rec.created_at >= store_now.saturating_sub(skew),
        "created at {}, long before {store_now}",
        rec.created_at
    );
    assert_eq!(rec.due_at, rec.created_at, "a task due now is due at its creation");
    assert_eq!(rec.deadline, Some(rec.created_at.saturating_add(Duration::from_secs(60))), "deadline");
    assert_eq!(rec.timeout, Some(Duration::from_secs(5)), "timeout");
    assert_eq!(rec.retry, Some(RetryPolicy::fixed(Duration::from_secs(2))), "retry policy");
    let plain = record(s, ns, &bare).await;
    assert_eq!(
        (plain.deadline, plain.timeout, plain.retry),
        (None, None, None),
        "options not given stay unset"
    );

    assert_eq!(ok("counts", s.counts(ns).await).get(TaskState::Created), 2, "both counted as CREATED");
    let page = ok("list", s.list(ns, ListQuery::new(TaskState::Created, 10)).await);
    let mut listed: Vec<TaskId> = page.tasks.into_iter().map(|t| t.id).collect();
    listed.sort();
    let mut want = vec![id, bare];
    want.sort();
    assert_eq!(listed, want, "both listed as CREATED");
}

/// Claims take fresh tasks in the order they were submitted, each once,
/// and what a claim took completes as any task does.
pub async fn fresh_id_claimed_in_submit_order<S: Storage>(s: &S, ns: &Namespace) {
    let mut ids = Vec::new();
    for n in 0..6 {
        ids.push(submit_fresh(s, ns, fresh(n)).await);
        // Distinct creation times: the order is then the due order.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let me = worker();
    let first = ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(4), LONG_LEASE).await);
    let rest = ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await);
    let got: Vec<TaskId> = first.iter().chain(&rest).map(|r| r.id.clone()).collect();
    assert_eq!(got, ids, "claimed in submit order, each once (first batch {} of 4)", first.len());
    assert!(
        ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "nothing left"
    );
    for rec in first.iter().chain(&rest) {
        assert_eq!(rec.attempts, 1, "{}: first attempt", rec.id);
        let state = ok("finish", s.finish(ns, &lease(rec), Finish::Completed).await);
        assert_eq!(state, TaskState::Completed, "{}", rec.id);
    }
    assert_eq!(ok("counts", s.counts(ns).await).get(TaskState::Completed), 6, "all six completed");
}

/// A fresh task submitted with a delay, or for a time, waits for it.
pub async fn fresh_id_delayed_not_claimed_before_due<S: Storage>(s: &S, ns: &Namespace) {
    let delay = Duration::from_millis(400);
    let mut task = fresh(1);
    task.due = Due::After(delay);
    let id = submit_fresh(s, ns, task).await;
    let at = Timestamp::now_system().saturating_add(Duration::from_secs(3_600));
    let mut later = fresh(2);
    later.due = Due::At(at);
    let later = submit_fresh(s, ns, later).await;
    let me = worker();
    let early = ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await);
    let rec = record(s, ns, &id).await;
    assert_eq!(rec.due_at, rec.created_at.saturating_add(delay), "due = created + delay");
    assert_eq!(record(s, ns, &later).await.due_at, at, "due_at is the time given");
    let store_now = ok("now", s.now(ns).await);
    if store_now < rec.due_at {
        assert!(early.is_empty(), "claimed before due: {early:?}");
    }
    let claimed =
        wait_for(Duration::from_secs(5), "the delayed fresh task to be claimed once due", || async {
            ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await).pop()
        })
        .await;
    assert_eq!(claimed.id, id);
    assert!(claimed.started_at >= Some(claimed.due_at), "claimed at {:?} before due", claimed.started_at);
    assert_eq!(record(s, ns, &later).await.state, TaskState::Created, "the task due in an hour waits");
}

/// Cancel and delete reach a fresh task that nothing has claimed or read:
/// the change holds, and no claim runs it afterwards.
pub async fn fresh_id_cancel_and_delete_before_a_claim<S: Storage>(s: &S, ns: &Namespace) {
    let cancelled = submit_fresh(s, ns, fresh(1)).await;
    assert_eq!(
        ok("cancel", s.cancel(ns, &cancelled).await),
        CancelOutcome::Cancelled,
        "a waiting task cancels"
    );
    let deleted = submit_fresh(s, ns, fresh(2)).await;
    assert!(ok("delete", s.delete(ns, &deleted).await), "delete finds the fresh task");
    assert!(
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "nothing left to claim"
    );
    assert_eq!(record(s, ns, &cancelled).await.state, TaskState::Cancelled);
    assert_eq!(ok("get", s.get(ns, &deleted).await), None, "deleted");
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!((counts.get(TaskState::Created), counts.get(TaskState::Cancelled)), (0, 1), "{counts:?}");
}

/// Another submit of a fresh task's id (a task built again under it) is a
/// second submit of the id: submitted alone or in a batch after the task,
/// before anything has claimed or read it, it is refused as a duplicate (or
/// answered `Existing` when idempotent), and one task runs. A clone of the
/// task is the same submit: answered `Created`, and still one task.
pub async fn fresh_id_another_submit_is_a_duplicate<S: Storage>(s: &S, ns: &Namespace) {
    let task = fresh(1);
    let again = |n: u32| NewTask::new(task.id.clone(), "fresh", json!({ "n": n }).to_string().into_bytes());
    let (alone, batched, mut idempotent, clone) = (again(2), again(3), again(4), task.clone());
    assert_ne!(alone.nonce(), task.nonce(), "a task built again is another submit");
    let id = submit_fresh(s, ns, task).await;
    let e = s.submit(ns, alone).await.err();
    assert!(matches!(&e, Some(crate::Error::DuplicateId(d)) if *d == id), "another submit alone: {e:?}");
    let other = fresh(2);
    let other_id = other.id.clone();
    let out = ok("submit_many", s.submit_many(ns, vec![batched, other]).await);
    assert!(
        matches!(&out[0], Err(crate::Error::DuplicateId(d)) if *d == id),
        "another submit in a batch: {out:?}"
    );
    assert!(matches!(&out[1], Ok(o) if o.id == other_id && o.outcome == SubmitOutcome::Created), "{out:?}");
    idempotent.mode = crate::storage::SubmitMode::Idempotent;
    let existing = ok("idempotent submit", s.submit(ns, idempotent).await);
    assert_eq!((existing.id, existing.outcome), (id.clone(), SubmitOutcome::Existing), "another, idempotent");
    let same = ok("the clone", s.submit(ns, clone).await);
    assert_eq!((same.id, same.outcome), (id.clone(), SubmitOutcome::Created), "a clone is the same submit");
    let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await);
    let mut got: Vec<TaskId> = claimed.iter().map(|r| r.id.clone()).collect();
    got.sort();
    let mut want = vec![id.clone(), other_id];
    want.sort();
    assert_eq!(got, want, "one task per id");
    assert_eq!(record(s, ns, &id).await.payload, br#"{"n":1}"#.to_vec(), "the first submit's task");
}

/// A fresh task keeps its queue and priority: it reads back with them, is
/// counted in its queue's stats, and only a claim of its queue takes it.
pub async fn queue_fresh_id_kept<S: crate::storage::QueueControl>(s: &S, ns: &Namespace) {
    let mail = crate::QueueName::new("mail").unwrap_or_else(|e| panic!("queue name: {e}"));
    let mut task = fresh(1);
    task.queue = mail.clone();
    task.priority = 7;
    let id = submit_fresh(s, ns, task).await;
    let rec = record(s, ns, &id).await;
    assert_eq!((rec.queue.as_str(), rec.priority), ("mail", 7), "{rec:?}");
    let infos = ok("queues", s.queues(ns).await);
    let info =
        infos.iter().find(|i| i.queue == mail).unwrap_or_else(|| panic!("no stats for mail: {infos:?}"));
    assert_eq!(info.waiting, 1, "{info:?}");
    assert!(
        ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await).is_empty(),
        "a default-queue claim takes none"
    );
    let plan = crate::queue::ClaimPlan::new(vec![crate::queue::QueueShare::new(mail, 10)], 10);
    let got = ok("claim", s.claim(ns, &worker(), &plan, LONG_LEASE).await);
    assert_eq!(got.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), vec![id], "the queue's claim takes it");
}
