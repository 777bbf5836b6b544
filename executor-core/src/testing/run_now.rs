//! Checks of `run_now`, the operator's "make this waiting task due now".

use std::time::Duration;

use crate::{
    Error, Namespace, TaskId, TaskState,
    queue::ClaimPlan,
    storage::{Due, Finish, RunNow},
};

use super::{
    new_task,
    support::{LONG_LEASE, claim_only, err, lease, ok, record, submit, task_in_state, tid, worker},
};

const HOUR: Duration = Duration::from_secs(3_600);

/// A task delayed by an hour is not claimed; after `run_now` it is due on
/// the store's clock and the next claim takes it, with nothing else about
/// it changed.
pub async fn run_now_makes_a_delayed_task_due<S: RunNow>(s: &S, ns: &Namespace) {
    let mut task = new_task("run-now-later");
    task.due = Due::After(HOUR);
    let id = submit(s, ns, task).await;
    let before = record(s, ns, &id).await;
    let none =
        ok("claim before run_now", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await);
    assert!(none.is_empty(), "a task due in an hour was claimed: {none:?}");

    ok("run_now", s.run_now(ns, &id).await);
    let after = record(s, ns, &id).await;
    let now = ok("now", s.now(ns).await);
    assert!(after.due_at <= now, "due {:?} is not at or before the store's now {now:?}", after.due_at);
    assert!(after.due_at >= before.created_at, "due {:?} before the task was created", after.due_at);
    assert_eq!(
        (after.state, after.attempts, &after.payload, after.fence),
        (TaskState::Created, 0, &before.payload, before.fence),
        "run_now changes the due time only"
    );
    let claimed = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!((claimed.state, claimed.attempts), (TaskState::Running, 1));

    // Not waiting any more: run_now is refused and changes nothing.
    let e = err("run_now of a RUNNING task", s.run_now(ns, &id).await);
    assert!(
        matches!(e, Error::IllegalTransition { state: TaskState::Running, .. }),
        "expected IllegalTransition from RUNNING, got {e:?}"
    );
    assert_eq!(record(s, ns, &id).await.fence, claimed.fence);
    let e = err("run_now of a missing task", s.run_now(ns, &tid("run-now-nobody")).await);
    assert!(matches!(e, Error::NotFound(_)), "expected NotFound, got {e:?}");
}

/// A retry waiting out an hour's backoff (`PENDING`) runs now, keeping its
/// attempt count: the next claim is its second attempt.
pub async fn run_now_cuts_a_retry_backoff<S: RunNow>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("run-now-retry")).await;
    let rec = claim_only(s, ns, &id, LONG_LEASE).await;
    let retry = Finish::Retry { delay: HOUR, error: "try again in an hour".to_owned() };
    assert_eq!(ok("retry", s.finish(ns, &lease(&rec), retry).await), TaskState::Pending);
    let none = ok(
        "claim during the backoff",
        s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await,
    );
    assert!(none.is_empty(), "a retry an hour away was claimed: {none:?}");

    ok("run_now", s.run_now(ns, &id).await);
    let pending = record(s, ns, &id).await;
    assert_eq!((pending.state, pending.attempts), (TaskState::Pending, 1), "{pending:?}");
    let second = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!(second.attempts, 2, "the claim after run_now is the second attempt");
}

/// A task already due keeps its due time, so it keeps its place: `run_now`
/// of the later of two due tasks does not put it before the earlier one.
pub async fn run_now_keeps_a_due_tasks_place<S: RunNow>(s: &S, ns: &Namespace) {
    let first = submit(s, ns, new_task("run-now-first")).await;
    // Due strictly later than the first on any clock.
    let mut second = new_task("run-now-second");
    let first_due = record(s, ns, &first).await.due_at;
    second.due = Due::At(first_due.saturating_add(Duration::from_millis(1)));
    let second = submit(s, ns, second).await;
    let due_before = record(s, ns, &second).await.due_at;
    // Wait (bounded) until the second is due by the store's clock, so
    // run_now finds it already due.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while ok("now", s.now(ns).await) < due_before {
        assert!(std::time::Instant::now() < deadline, "the store's clock did not reach {due_before:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    ok("run_now of a due task", s.run_now(ns, &second).await);
    assert_eq!(record(s, ns, &second).await.due_at, due_before, "a due task's due time stays");
    let claimed = claim_only(s, ns, &first, LONG_LEASE).await;
    assert_eq!(claimed.id, first);
}

/// Finished and dead-lettered tasks are refused with the state they are
/// in (a dead letter is requeued, not run now).
pub async fn run_now_refuses_finished_tasks<S: RunNow>(s: &S, ns: &Namespace) {
    for state in [TaskState::Completed, TaskState::Failed, TaskState::Cancelled] {
        let id = task_in_state(s, ns, &format!("run-now-{}", state.as_str().to_lowercase()), state).await;
        let e = err(&format!("run_now of a {state} task"), s.run_now(ns, &id).await);
        assert!(
            matches!(e, Error::IllegalTransition { state: st, .. } if st == state),
            "expected IllegalTransition from {state}, got {e:?}"
        );
        assert_eq!(record(s, ns, &id).await.state, state, "a refused run_now changes nothing");
    }
}

/// `run_now` racing claims and completions: 200 tasks due in an hour, four
/// claimers that complete what they get, and a caller that runs every task
/// now, over and over, also after it was claimed or completed. Every task
/// is claimed exactly once (a run now never hands a running or finished
/// task out again) and completes; the only refusals are for tasks no
/// longer waiting.
pub async fn run_now_races_claims_without_double_runs<S: RunNow>(s: &S, ns: &Namespace) {
    const N: usize = 200;
    let ids: Vec<TaskId> = (0..N).map(|i| tid(&format!("race-{i:03}"))).collect();
    let tasks = ids
        .iter()
        .map(|id| {
            let mut t = new_task(id.as_str());
            t.due = Due::After(HOUR);
            t
        })
        .collect();
    for r in ok("submit_many", s.submit_many(ns, tasks).await) {
        ok("submit in submit_many", r);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let claimer = || async {
        let me = worker();
        let mut got = Vec::new();
        loop {
            let batch = ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await);
            if batch.is_empty() {
                let done = ok("counts", s.counts(ns).await).get(TaskState::Completed);
                if done == N as u64 || std::time::Instant::now() > deadline {
                    return got;
                }
                tokio::task::yield_now().await;
                continue;
            }
            for t in batch {
                ok("complete", s.finish(ns, &lease(&t), Finish::Completed).await);
                got.push(t.id);
            }
        }
    };
    let runner = async {
        for _ in 0..3 {
            for id in &ids {
                match s.run_now(ns, id).await {
                    Ok(()) => {}
                    Err(Error::IllegalTransition { state, .. }) => {
                        assert!(
                            matches!(state, TaskState::Running | TaskState::Completed),
                            "run_now of {id} refused from {state}"
                        );
                    }
                    Err(e) => panic!("run_now of {id}: {e:?}"),
                }
            }
        }
    };
    // Boxed: five store futures side by side overflow a debug build's stack
    // behind a wrapper store (AnyStorage).
    let (a, b, c, d, ()) = tokio::join!(
        Box::pin(claimer()),
        Box::pin(claimer()),
        Box::pin(claimer()),
        Box::pin(claimer()),
        Box::pin(runner)
    );
    let mut claims = std::collections::HashMap::<TaskId, usize>::new();
    for id in [a, b, c, d].into_iter().flatten() {
        *claims.entry(id).or_default() += 1;
    }
    let twice: Vec<_> = claims.iter().filter(|(_, n)| **n > 1).map(|(id, _)| id).take(5).collect();
    assert!(twice.is_empty(), "tasks claimed more than once after run_now, e.g. {twice:?}");
    assert_eq!(claims.len(), N, "tasks claimed: {} of {N}", claims.len());
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!(counts.get(TaskState::Completed), N as u64, "{counts:?}");
}
