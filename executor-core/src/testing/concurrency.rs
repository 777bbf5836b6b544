//! Checks of the wake-up (no start before due) and of no loss and no double claim
//! under concurrent claimers ( and no two live attempts).

use std::{collections::HashMap, time::Duration};

use tokio::time::Instant;

use crate::{
    Namespace, QueueName, TaskId, TaskRecord, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Due, Finish, Storage},
};

use super::{
    new_task,
    support::{LONG_LEASE, ok, submit, worker},
};

/// Waits (up to 10 s) with `wait_for_work(5 s)` and a claim after each
/// return, until the claim yields a task.
async fn wait_and_claim<S: Storage>(s: &S, ns: &Namespace, me: &WorkerId) -> (TaskRecord, Duration) {
    let start = Instant::now();
    loop {
        ok("wait_for_work", s.wait_for_work(ns, &[QueueName::default()], Duration::from_secs(5)).await);
        if let Some(t) = ok("claim", s.claim(ns, me, &ClaimPlan::default_queue(1), LONG_LEASE).await).pop() {
            return (t, start.elapsed());
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no work after waiting 10 s");
    }
}

/// An idle waiter (`max_wait` 5 s) returns soon after a task is submitted
/// from elsewhere, not at `max_wait`.
pub async fn wait_for_work_wakes_on_submit<S: Storage>(s: &S, ns: &Namespace) {
    let me = worker();
    let submitter = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        submit(s, ns, new_task("wake-on-submit")).await
    };
    let ((claimed, waited), id) = tokio::join!(wait_and_claim(s, ns, &me), submitter);
    assert_eq!(claimed.id, id);
    assert!(waited < Duration::from_secs(2), "the waiter took {waited:?} to see a submit (max_wait 5 s)");
}

/// An idle waiter returns when the earliest due time arrives, not at
/// `max_wait`, and the task is then claimable.
pub async fn wait_for_work_wakes_at_due_time<S: Storage>(s: &S, ns: &Namespace) {
    let mut t = new_task("wake-at-due");
    t.due = Due::After(Duration::from_millis(400));
    let id = submit(s, ns, t).await;
    let (claimed, waited) = wait_and_claim(s, ns, &worker()).await;
    assert_eq!(claimed.id, id);
    assert!(claimed.started_at >= Some(claimed.due_at), "claimed before due: {claimed:?}");
    assert!(waited < Duration::from_secs(2), "the waiter took {waited:?} to see a task due in 400 ms");
}

/// With nothing to do, `wait_for_work` returns by `max_wait`.
pub async fn wait_for_work_returns_by_max_wait<S: Storage>(s: &S, ns: &Namespace) {
    let mut t = new_task("wake-far");
    t.due = Due::After(Duration::from_secs(3_600));
    submit(s, ns, t).await;
    let start = Instant::now();
    ok("wait_for_work", s.wait_for_work(ns, &[QueueName::default()], Duration::from_millis(300)).await);
    let waited = start.elapsed();
    assert!(waited < Duration::from_secs(2), "wait_for_work(300 ms) took {waited:?}");
}

const TASKS: usize = 10_000;
const CLAIMERS: usize = 8;
const BATCH: usize = 32;

/// One claimer: claims batches until nothing is left, completes each with
/// its fence, returns what it claimed.
async fn claimer<S: Storage>(s: &S, ns: &Namespace) -> Vec<TaskId> {
    let me = worker();
    let mut mine = Vec::new();
    loop {
        let batch = ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(BATCH), LONG_LEASE).await);
        if batch.is_empty() {
            return mine;
        }
        assert!(batch.len() <= BATCH, "claim returned {} tasks for limit {BATCH}", batch.len());
        let mut items = Vec::with_capacity(batch.len());
        for t in &batch {
            assert_eq!((t.state, t.attempts, t.worker.as_ref()), (TaskState::Running, 1, Some(&me)), "{t:?}");
            let lease = t.lease().unwrap_or_else(|| panic!("claimed {} without a lease", t.id));
            items.push((lease, Finish::Completed));
        }
        let results = ok("finish_many", s.finish_many(ns, items).await);
        assert_eq!(results.len(), batch.len(), "finish_many answers every item");
        for (t, r) in batch.iter().zip(results) {
            let state = r.unwrap_or_else(|e| panic!("finish of {} refused: {e}", t.id));
            assert_eq!(state, TaskState::Completed, "{}", t.id);
        }
        mine.extend(batch.into_iter().map(|t| t.id));
        // Lets the other claimers in even on a store that never yields.
        tokio::task::yield_now().await;
    }
}

/// 10,000 tasks, 8 concurrent claimers with batches of 32 completing what
/// they claim: every task is claimed exactly once, no finish is refused,
/// and all end `COMPLETED`.
pub async fn no_loss_no_double_claim_concurrent<S: Storage>(s: &S, ns: &Namespace) {
    let ids: Vec<String> = (0..TASKS).map(|i| format!("bulk-{i:05}")).collect();
    for chunk in ids.chunks(1_000) {
        let tasks = chunk.iter().map(|id| new_task(id)).collect();
        let results = ok("submit_many", s.submit_many(ns, tasks).await);
        assert_eq!(results.len(), chunk.len(), "submit_many answers every task");
        for r in results {
            ok("submit in submit_many", r);
        }
    }
    let c = || claimer(s, ns);
    let (a, b, c2, d, e, f, g, h) = tokio::join!(c(), c(), c(), c(), c(), c(), c(), c());
    let per_claimer = [a, b, c2, d, e, f, g, h];
    debug_assert_eq!(per_claimer.len(), CLAIMERS);
    let mut claims: HashMap<TaskId, usize> = HashMap::with_capacity(TASKS);
    for id in per_claimer.into_iter().flatten() {
        *claims.entry(id).or_default() += 1;
    }
    let twice: Vec<_> = claims.iter().filter(|(_, n)| **n > 1).map(|(id, _)| id).take(5).collect();
    assert!(twice.is_empty(), "tasks claimed more than once, e.g. {twice:?}");
    assert_eq!(claims.len(), TASKS, "tasks claimed: {} of {TASKS}", claims.len());
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!(counts.get(TaskState::Completed), TASKS as u64, "{counts:?}");
    assert_eq!(counts.total(), TASKS as u64, "{counts:?}");
}
