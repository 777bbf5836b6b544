//! Checks of invariants 6 and 7 at the store's own entry points: every
//! duration and instant outside the shared range gets the same clear
//! [`Error::Invalid`] on every store, the extremes inside it read back
//! intact, one bad item of a batch is refused alone, and any task can be
//! deleted.

use std::time::Duration;

use proptest::{
    prelude::*,
    strategy::{Strategy, ValueTree},
    test_runner::TestRunner,
};

use crate::{
    Error, Namespace, RetryPolicy, TaskState, Timestamp,
    options::MAX_RETRY_LIMIT,
    queue::ClaimPlan,
    storage::{Debounce, Due, Finish, NewTask, Storage, SubmitMode},
    time::MAX_DURATION,
};

use super::{
    new_task,
    support::{LONG_LEASE, err, lease, ok, record, submit, tid, worker},
};

const TOO_LONG: Duration = MAX_DURATION.saturating_add(Duration::from_millis(1));

fn with(id: &str, edit: impl FnOnce(&mut NewTask)) -> NewTask {
    let mut t = new_task(id);
    edit(&mut t);
    t
}

fn debounce(window: Duration, max_wait: Option<Duration>) -> SubmitMode {
    SubmitMode::Debounce(Debounce { key: "k".to_owned(), window, max_wait })
}

/// Tasks that break one shared range each, named for the message.
fn out_of_range() -> Vec<(&'static str, NewTask)> {
    vec![
        ("delay past the maximum", with("r1", |t| t.due = Due::After(TOO_LONG))),
        ("delay of Duration::MAX", with("r2", |t| t.due = Due::After(Duration::MAX))),
        (
            "run_at past year 9999",
            with("r3", |t| t.due = Due::At(Timestamp::from_millis(Timestamp::MAX.as_millis() + 1))),
        ),
        ("run_at of u64::MAX ms", with("r4", |t| t.due = Due::At(Timestamp::from_millis(u64::MAX)))),
        ("max_duration of Duration::MAX", with("r5", |t| t.max_duration = Some(Duration::MAX))),
        ("timeout of Duration::MAX", with("r6", |t| t.timeout = Some(Duration::MAX))),
        ("debounce window of Duration::MAX", with("r7", |t| t.mode = debounce(Duration::MAX, None))),
        (
            "debounce max_wait of Duration::MAX",
            with("r8", |t| t.mode = debounce(Duration::from_secs(1), Some(Duration::MAX))),
        ),
        (
            "fixed retry interval of Duration::MAX",
            with("r9", |t| t.retry = Some(RetryPolicy::fixed(Duration::MAX))),
        ),
        ("zero attempts", with("r10", |t| t.max_attempts = 0)),
        ("u32::MAX attempts", with("r11", |t| t.max_attempts = u32::MAX)),
    ]
}

/// Every duration or instant outside the shared range (1,000 years; year
/// 9999) is refused with [`Error::Invalid`] by the store itself, alone and
/// in a batch beside good tasks, and nothing is stored for it (bad input never panics nor loses tasks).
pub async fn out_of_range_options_refused<S: Storage>(s: &S, ns: &Namespace) {
    for (what, task) in out_of_range() {
        let id = task.id.clone();
        let e = err(&format!("submit with {what}"), s.submit(ns, task).await);
        assert!(matches!(e, Error::Invalid { .. }), "submit with {what}: expected Invalid, got {e:?}");
        assert!(!e.is_retryable(), "submit with {what}: {e} must not be retryable");
        assert_eq!(ok("get", s.get(ns, &id).await), None, "submit with {what} was refused but stored {id}");
    }
    let mut batch = vec![new_task("good-1")];
    batch.extend(out_of_range().into_iter().map(|(_, t)| t));
    batch.push(new_task("good-2"));
    let answers = ok("submit_many with bad items", s.submit_many(ns, batch).await);
    let n = answers.len();
    for (i, answer) in answers.into_iter().enumerate() {
        let good = i == 0 || i == n - 1;
        match answer {
            Ok(_) if good => {}
            Err(Error::Invalid { .. }) if !good => {}
            other => panic!(
                "submit_many item {i}: expected {}, got {other:?}",
                if good { "Ok" } else { "Invalid" }
            ),
        }
    }
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!(counts.total(), 2, "only the two good tasks of the batch are stored: {counts:?}");
}

/// The extremes inside the range are accepted, read back intact (never a
/// record that no longer parses) and are not due.
pub async fn extreme_valid_options_read_back<S: Storage>(s: &S, ns: &Namespace) {
    let far = with("far-delay", |t| {
        t.due = Due::After(MAX_DURATION);
        t.max_duration = Some(MAX_DURATION);
        t.timeout = Some(MAX_DURATION);
        t.max_attempts = MAX_RETRY_LIMIT + 1;
        t.retry = Some(RetryPolicy::fixed(MAX_DURATION));
    });
    let id = submit(s, ns, far).await;
    let rec = record(s, ns, &id).await;
    assert!(rec.due_at >= rec.created_at.saturating_add(MAX_DURATION), "due of a 1,000-year delay: {rec:?}");
    assert_eq!(rec.timeout, Some(MAX_DURATION), "timeout at the maximum");
    assert_eq!(rec.max_attempts, MAX_RETRY_LIMIT + 1, "max_attempts at the maximum");
    assert_eq!(rec.retry, Some(RetryPolicy::fixed(MAX_DURATION)), "retry interval at the maximum");
    let last = submit(s, ns, with("last-instant", |t| t.due = Due::At(Timestamp::MAX))).await;
    assert_eq!(record(s, ns, &last).await.due_at, Timestamp::MAX, "run_at at the latest instant");
    let window = with("long-window", |t| {
        t.id = crate::TaskId::generate();
        t.mode = debounce(MAX_DURATION, Some(MAX_DURATION));
    });
    let debounced = ok("debounce at the maximum", s.submit(ns, window).await).id;
    assert!(record(s, ns, &debounced).await.due_at > Timestamp::now_system(), "a 1,000-year window");
    let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await);
    assert!(claimed.is_empty(), "tasks due in the far future were claimed now: {claimed:?}");
    let page = ok("list CREATED", s.list(ns, crate::ListQuery::new(TaskState::Created, 10)).await);
    assert_eq!(page.tasks.len(), 3, "every extreme task lists: {page:?}");
    assert!(page.unreadable.is_empty(), "extreme tasks must stay readable: {:?}", page.unreadable);
}

/// A finish whose retry delay is past the range is refused with
/// [`Error::Invalid`] alone: its task stays `RUNNING` under the same lease,
/// and its neighbours in a `finish_many` are written (no neighbour harm).
pub async fn finish_out_of_range_refused_alone<S: Storage>(s: &S, ns: &Namespace) {
    for i in 0..3 {
        submit(s, ns, new_task(&format!("fin-{i}"))).await;
    }
    let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(3), LONG_LEASE).await);
    assert_eq!(claimed.len(), 3, "three due tasks claimed");
    let bad = Finish::Retry { delay: Duration::MAX, error: "retry at the end of time".to_owned() };
    let e = err("finish with a retry of Duration::MAX", s.finish(ns, &lease(&claimed[0]), bad.clone()).await);
    assert!(
        matches!(e, Error::Invalid { .. }),
        "finish with Duration::MAX retry: expected Invalid, got {e:?}"
    );
    let items: Vec<_> = claimed
        .iter()
        .enumerate()
        .map(|(i, r)| (lease(r), if i == 1 { bad.clone() } else { Finish::Completed }))
        .collect();
    let answers = ok("finish_many with one bad item", s.finish_many(ns, items).await);
    assert_eq!(answers.len(), 3, "one answer per item");
    for (i, answer) in answers.iter().enumerate() {
        match (i, answer) {
            (1, Err(Error::Invalid { .. })) | (0 | 2, Ok(TaskState::Completed)) => {}
            _ => panic!("finish_many item {i}: got {answer:?}"),
        }
    }
    for (i, rec) in claimed.iter().enumerate() {
        let now = record(s, ns, &rec.id).await;
        let expected = if i == 1 { TaskState::Running } else { TaskState::Completed };
        assert_eq!(now.state, expected, "task {} after the batch", rec.id);
    }
    let retry = Finish::Retry { delay: MAX_DURATION, error: "far but valid".to_owned() };
    let state = ok("finish with the longest valid retry", s.finish(ns, &lease(&claimed[1]), retry).await);
    assert_eq!(state, TaskState::Pending, "a retry at the maximum delay");
    assert!(record(s, ns, &claimed[1].id).await.due_at > Timestamp::now_system(), "due far away");
}

/// `delete` removes a task in any state with its debounce key and count;
/// a deleted running task's finish is refused; a missing id answers false.
pub async fn delete_removes_any_state<S: Storage>(s: &S, ns: &Namespace) {
    // Generated ids: a partitioned store places a debounced task in its
    // key's partition, under another generated id if it must.
    let debounced = || {
        with("del-wait", |t| {
            t.id = crate::TaskId::generate();
            t.mode = debounce(Duration::from_secs(60), None);
        })
    };
    let waiting = ok("submit debounced", s.submit(ns, debounced()).await).id;
    assert!(ok("delete waiting", s.delete(ns, &waiting).await), "delete of a waiting task answers true");
    assert_eq!(ok("get", s.get(ns, &waiting).await), None, "deleted task still readable");
    let again = ok("submit under the freed key", s.submit(ns, debounced()).await);
    assert_eq!(again.outcome, crate::SubmitOutcome::Created, "the deleted task's debounce key must be free");
    assert_ne!(again.id, waiting);
    assert!(ok("delete debounced", s.delete(ns, &again.id).await));

    let running = submit(s, ns, new_task("del-run")).await;
    let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(1), LONG_LEASE).await);
    assert_eq!(claimed.len(), 1, "one task claimed");
    assert!(ok("delete running", s.delete(ns, &running).await));
    let e = err("finish of a deleted task", s.finish(ns, &lease(&claimed[0]), Finish::Completed).await);
    assert!(
        matches!(e, Error::StaleFence { .. }),
        "finish of a deleted task: expected StaleFence, got {e:?}"
    );
    assert!(!ok("delete missing", s.delete(ns, &running).await), "delete of a missing task answers false");
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!(counts.total(), 0, "deleted tasks must leave no counts: {counts:?}");
}

/// A proptest over every option and duration of a submit and a retry:
/// each gets a clear answer (stored, or [`Error::Invalid`]), never a panic,
/// never a record that no longer reads, and a stored task claims and
/// finishes as documented. Deterministic seed, 40 cases per store.
pub async fn random_options_never_corrupt<S: Storage>(s: &S, ns: &Namespace) {
    let duration = prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::from_millis(1)),
        Just(MAX_DURATION),
        Just(TOO_LONG),
        Just(Duration::MAX),
        (0u64..=u64::MAX).prop_map(Duration::from_millis),
        (0u64..100_000).prop_map(Duration::from_millis),
    ];
    let instant = prop_oneof![
        Just(Timestamp::MAX.as_millis()),
        Just(Timestamp::MAX.as_millis() + 1),
        Just(u64::MAX),
        Just(0u64),
        0u64..=u64::MAX,
    ]
    .prop_map(Timestamp::from_millis);
    let case = (
        prop_oneof![Just(None), duration.clone().prop_map(Some)],
        prop_oneof![Just(Due::Now), duration.clone().prop_map(Due::After), instant.prop_map(Due::At)],
        prop_oneof![Just(None), duration.clone().prop_map(Some)],
        prop_oneof![Just(None), duration.clone().prop_map(|d| Some(RetryPolicy::fixed(d)))],
        prop_oneof![Just(0u32), Just(1u32), Just(MAX_RETRY_LIMIT + 1), Just(u32::MAX), 0u32..20],
        duration.clone(),
        duration,
    );
    let mut runner = TestRunner::deterministic();
    for n in 0..40 {
        let tree = case.new_tree(&mut runner).unwrap_or_else(|e| panic!("proptest case {n}: {e}"));
        let (max_duration, due, timeout, retry, max_attempts, window, retry_delay) = tree.current();
        let id = tid(&format!("p{n}"));
        let task = NewTask {
            id: id.clone(),
            max_duration,
            due,
            timeout,
            retry,
            max_attempts,
            mode: if n % 5 == 0 { debounce(window, None) } else { SubmitMode::Plain },
            ..new_task("p")
        };
        let expect_ok = task.validate().is_ok();
        let described = format!("case {n}: {task:?}");
        match s.submit(ns, task).await {
            Ok(_) if expect_ok => {}
            Err(Error::Invalid { .. }) if !expect_ok => {
                assert_eq!(ok("get", s.get(ns, &id).await), None, "{described}: refused but stored");
                continue;
            }
            other => panic!("{described}: validate() says {expect_ok}, the store answered {other:?}"),
        }
        let stored = s.get(ns, &id).await;
        let Ok(Some(rec)) = stored else { panic!("{described}: stored task does not read back: {stored:?}") };
        if rec.due_at > ok("now", s.now(ns).await) {
            ok("delete", s.delete(ns, &id).await);
            continue;
        }
        let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(1), LONG_LEASE).await);
        let Some(claimed) = claimed.into_iter().next() else { panic!("{described}: due task not claimed") };
        let finish = Finish::Retry { delay: retry_delay, error: "proptest".to_owned() };
        let valid = finish.validate().is_ok();
        match s.finish(ns, &lease(&claimed), finish).await {
            Ok(TaskState::Pending) if valid => {}
            Err(Error::Invalid { .. }) if !valid => {}
            other => panic!("{described}: retry after {retry_delay:?} answered {other:?}"),
        }
        let after = s.get(ns, &id).await;
        assert!(matches!(after, Ok(Some(_))), "{described}: record unreadable after finish: {after:?}");
        ok("delete", s.delete(ns, &id).await);
    }
}

/// An operation of the state diagram, tried on a task in every state.
#[derive(Clone, Debug)]
enum Op {
    Claim,
    Finish(Finish, crate::storage::Transition),
    Cancel,
    Requeue,
}

fn ops() -> Vec<Op> {
    use crate::storage::Transition as T;
    let e = || "transition check".to_owned();
    vec![
        Op::Claim,
        Op::Finish(Finish::Completed, T::Complete),
        Op::Finish(Finish::Retry { delay: Duration::from_secs(3_600), error: e() }, T::Retry),
        Op::Finish(Finish::Failed { error: e() }, T::Fail),
        Op::Finish(Finish::TimedOut { error: e() }, T::TimeOut),
        Op::Finish(Finish::Errored { error: e() }, T::Error),
        Op::Finish(Finish::Cancelled, T::Cancel),
        Op::Finish(Finish::Released, T::Release),
        Op::Finish(Finish::Postponed { delay: Duration::from_secs(3_600), error: e() }, T::Release),
        Op::Cancel,
        Op::Requeue,
    ]
}

/// A fresh task driven into `state`, alone among the namespace's due
/// tasks; its lease when it is `RUNNING`.
async fn in_state<S: Storage>(
    s: &S,
    ns: &Namespace,
    id: &str,
    state: TaskState,
) -> (crate::TaskId, Option<crate::storage::Lease>) {
    let id = submit(s, ns, new_task(id)).await;
    let finish = match state {
        TaskState::Created => return (id, None),
        TaskState::Cancelled => {
            ok("cancel", s.cancel(ns, &id).await);
            return (id, None);
        }
        TaskState::Running => {
            let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(1), LONG_LEASE).await);
            let rec = claimed.into_iter().next().unwrap_or_else(|| panic!("{id} not claimable"));
            return (id, Some(lease(&rec)));
        }
        TaskState::Pending => Finish::Retry { delay: Duration::ZERO, error: "setup".to_owned() },
        TaskState::Completed => Finish::Completed,
        TaskState::Failed => Finish::Failed { error: "setup".to_owned() },
        TaskState::Timeout => Finish::TimedOut { error: "setup".to_owned() },
        TaskState::Error => Finish::Errored { error: "setup".to_owned() },
    };
    let claimed = ok("claim", s.claim(ns, &worker(), &ClaimPlan::default_queue(1), LONG_LEASE).await);
    let rec = claimed.into_iter().next().unwrap_or_else(|| panic!("{id} not claimable"));
    assert_eq!(ok("finish", s.finish(ns, &lease(&rec), finish).await), state, "setup of {id}");
    (id, None)
}

/// Puts a task in every state and tries every operation of the diagram on
/// it (claim, each finish, cancel, requeue), asserting exactly what
/// [`TaskState::TRANSITIONS`] allows: the table is the contract, on every
/// store. (Reaping is checked by `reap_after_lease_expiry`.)
pub async fn transitions_follow_the_table<S: Storage>(s: &S, ns: &Namespace) {
    for (n, state) in TaskState::ALL.into_iter().enumerate() {
        for (m, op) in ops().into_iter().enumerate() {
            let (id, held) = in_state(s, ns, &format!("tr-{n}-{m}"), state).await;
            let before = record(s, ns, &id).await;
            let what = format!("{op:?} on a {state} task");
            let expected = match &op {
                Op::Claim => {
                    let got =
                        ok(&what, s.claim(ns, &worker(), &ClaimPlan::default_queue(1), LONG_LEASE).await);
                    assert_eq!(got.len(), usize::from(state.is_waiting()), "{what}: claimed {got:?}");
                    state.can(crate::storage::Transition::Claim).unwrap_or(state)
                }
                Op::Finish(finish, t) => {
                    let lease = held.clone().unwrap_or(crate::storage::Lease::new(
                        id.clone(),
                        before.fence,
                        worker(),
                    ));
                    let answer = s.finish(ns, &lease, finish.clone()).await;
                    // A finish ends an attempt: only a RUNNING task has one.
                    let allowed = if state == TaskState::Running { state.can(*t) } else { None };
                    match allowed {
                        Some(to) => assert_eq!(ok(&what, answer), to, "{what}"),
                        None => {
                            let e = err(&what, answer);
                            assert!(
                                matches!(e, Error::StaleFence { .. }),
                                "{what}: expected StaleFence, got {e:?}"
                            );
                        }
                    }
                    allowed.unwrap_or(state)
                }
                Op::Cancel => {
                    let answer = s.cancel(ns, &id).await;
                    match state {
                        TaskState::Running => {
                            assert_eq!(ok(&what, answer), crate::query::CancelOutcome::Requested, "{what}");
                            state
                        }
                        _ => match state.can(crate::storage::Transition::Cancel) {
                            Some(to) => {
                                assert_eq!(
                                    ok(&what, answer),
                                    crate::query::CancelOutcome::Cancelled,
                                    "{what}"
                                );
                                to
                            }
                            None => {
                                let e = err(&what, answer);
                                assert!(matches!(e, Error::IllegalTransition { .. }), "{what}: got {e:?}");
                                state
                            }
                        },
                    }
                }
                Op::Requeue => {
                    let answer = s.requeue(ns, &id).await;
                    match state.can(crate::storage::Transition::Requeue) {
                        Some(to) => {
                            ok(&what, answer);
                            to
                        }
                        None => {
                            let e = err(&what, answer);
                            assert!(matches!(e, Error::IllegalTransition { .. }), "{what}: got {e:?}");
                            state
                        }
                    }
                }
            };
            assert_eq!(record(s, ns, &id).await.state, expected, "state after {what}");
            ok("delete", s.delete(ns, &id).await);
        }
    }
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!(counts.total(), 0, "every case deleted its task: {counts:?}");
}
