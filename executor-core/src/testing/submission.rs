//! Checks of submit in every mode, and of due times (no start before due).

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    Error, Namespace, RetryPolicy, SubmitOutcome, TaskRecord, TaskState, Timestamp,
    queue::ClaimPlan,
    storage::{Debounce, Due, Storage, SubmitMode},
};

use super::{
    new_task,
    support::{LONG_LEASE, err, ok, record, submit, tid, worker},
    wait_for,
};

fn payload(rec: &TaskRecord) -> Value {
    serde_json::from_slice(&rec.payload)
        .unwrap_or_else(|e| panic!("task {} payload is not the JSON submitted: {e}", rec.id))
}

/// A debounced task with a generated id, as `TaskBuilder::debounce` sends
/// without `.id(..)`: a store may place it under another generated id (a
/// partitioned store puts it in its key's partition), so the checks use the
/// id the store answers.
fn debounced(key: &str, window: Duration, max_wait: Option<Duration>, n: u32) -> crate::storage::NewTask {
    let mut t = new_task("debounced");
    t.id = crate::TaskId::generate();
    t.payload = json!({ "n": n }).to_string().into_bytes();
    t.mode = SubmitMode::Debounce(Debounce { key: key.to_owned(), window, max_wait });
    t
}

/// Submits a debounced task that must be created; the id the store answers.
async fn created<S: Storage>(s: &S, ns: &Namespace, task: crate::storage::NewTask) -> crate::TaskId {
    let out = ok("debounced submit", s.submit(ns, task).await);
    assert_eq!(out.outcome, SubmitOutcome::Created, "a debounced submit under a free key creates a task");
    out.id
}

/// A submitted task reads back with every field as documented on
/// [`TaskRecord`]: `CREATED`, no attempts, due at creation, deadline =
/// created + `max_duration`, options kept, no lease.
pub async fn submit_and_get<S: Storage>(s: &S, ns: &Namespace) {
    let mut task = new_task("submit-and-get");
    task.name = "process_order".to_owned();
    task.payload = br#"{"order_id":7,"note":"h\u00e9llo"}"#.to_vec();
    task.max_attempts = 4;
    task.max_duration = Some(Duration::from_secs(60));
    task.timeout = Some(Duration::from_secs(5));
    task.retry = Some(RetryPolicy::fixed(Duration::from_secs(2)));
    let before = Timestamp::now_system();
    let id = submit(s, ns, task).await;
    let rec = record(s, ns, &id).await;
    assert_eq!(rec.id, id);
    assert_eq!(rec.name, "process_order");
    assert_eq!(rec.state, TaskState::Created);
    assert_eq!(payload(&rec), json!({"order_id": 7, "note": "héllo"}), "payload");
    assert_eq!(rec.attempts, 0, "attempts of a new task");
    assert_eq!(rec.max_attempts, 4);
    let skew = Duration::from_secs(60);
    assert!(
        rec.created_at >= before.saturating_sub(skew) && rec.created_at <= before.saturating_add(skew),
        "created_at {} is not near this machine's clock {before}",
        rec.created_at
    );
    assert_eq!(rec.due_at, rec.created_at, "a task due now is due at its creation");
    assert_eq!(rec.deadline, Some(rec.created_at.saturating_add(Duration::from_secs(60))), "deadline");
    assert_eq!(rec.timeout, Some(Duration::from_secs(5)), "timeout");
    assert_eq!(rec.retry, Some(RetryPolicy::fixed(Duration::from_secs(2))), "retry policy");
    assert_eq!((rec.started_at, rec.finished_at), (None, None), "start/finish of a new task");
    assert_eq!((rec.worker.as_ref(), rec.lease_until), (None, None), "lease of a new task");
    assert_eq!(rec.last_error, None);
    assert!(!rec.cancel_requested);
    assert_eq!(rec.debounce_key, None);

    let bare = submit(s, ns, new_task("submit-and-get-bare")).await;
    let rec = record(s, ns, &bare).await;
    assert_eq!((rec.deadline, rec.timeout, rec.retry), (None, None, None), "options not given stay unset");
    assert!(ok("get missing", s.get(ns, &tid("never-submitted")).await).is_none(), "get of a missing id");
}

/// A plain submit of a taken id is refused with `DuplicateId` and changes
/// nothing, whatever the existing task's state.
pub async fn duplicate_id_refused<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("dup")).await;
    let before = record(s, ns, &id).await;
    let mut again = new_task("dup");
    again.payload = br#"{"n":2}"#.to_vec();
    let e = err("duplicate submit", s.submit(ns, again.clone()).await);
    assert!(matches!(&e, Error::DuplicateId(d) if *d == id), "expected DuplicateId({id}), got {e:?}");
    assert_eq!(record(s, ns, &id).await, before, "a refused duplicate must not change the task");

    let rec = super::support::claim_only(s, ns, &id, LONG_LEASE).await;
    ok("complete", s.finish(ns, &super::support::lease(&rec), crate::storage::Finish::Completed).await);
    let e = err("duplicate of a finished task", s.submit(ns, again).await);
    assert!(matches!(e, Error::DuplicateId(_)), "a finished task's id stays taken: {e:?}");
}

/// An idempotent submit of a taken id returns it as `Existing` and changes
/// nothing; of a free id it creates the task.
pub async fn idempotent_submit_returns_existing<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("idem")).await;
    let before = record(s, ns, &id).await;
    let mut again = new_task("idem");
    again.payload = br#"{"n":2}"#.to_vec();
    again.due = Due::After(Duration::from_secs(3_600));
    again.mode = SubmitMode::Idempotent;
    let out = ok("idempotent repeat", s.submit(ns, again.clone()).await);
    assert_eq!((out.id.clone(), out.outcome), (id.clone(), SubmitOutcome::Existing));
    assert_eq!(record(s, ns, &id).await, before, "an idempotent repeat must not change the task");

    let rec = super::support::claim_only(s, ns, &id, LONG_LEASE).await;
    ok("complete", s.finish(ns, &super::support::lease(&rec), crate::storage::Finish::Completed).await);
    let out = ok("idempotent repeat of a finished task", s.submit(ns, again).await);
    assert_eq!(out.outcome, SubmitOutcome::Existing, "finished tasks are returned too");
    assert_eq!(record(s, ns, &id).await.state, TaskState::Completed);

    let mut fresh = new_task("idem-new");
    fresh.mode = SubmitMode::Idempotent;
    let out = ok("idempotent submit of a free id", s.submit(ns, fresh).await);
    assert_eq!((out.id.as_str(), out.outcome), ("idem-new", SubmitOutcome::Created));
}

/// Debounce: a repeat under the key while the task waits moves its due time
/// to now + window and replaces its payload; once the task is claimed the
/// key no longer binds, and the next submit creates a new task.
pub async fn debounce_moves_due_and_replaces_payload<S: Storage>(s: &S, ns: &Namespace) {
    let hour = Duration::from_secs(3_600);
    let id = created(s, ns, debounced("k1", hour, None, 1)).await;
    let first = record(s, ns, &id).await;
    assert_eq!(first.debounce_key.as_deref(), Some("k1"));
    assert_eq!(first.due_at, first.created_at.saturating_add(hour), "due = now + window");

    let window = Duration::from_millis(100);
    let repeat = debounced("k1", window, None, 2);
    let repeat_id = repeat.id.clone();
    let out = ok("debounce repeat", s.submit(ns, repeat).await);
    assert_eq!((out.id.clone(), out.outcome), (id.clone(), SubmitOutcome::Debounced));
    assert!(
        ok("get the repeat", s.get(ns, &repeat_id).await).is_none(),
        "a debounced repeat creates no task"
    );
    let moved = record(s, ns, &id).await;
    assert_eq!(payload(&moved), json!({"n": 2}), "the repeat's payload replaces the old one");
    assert!(moved.due_at < first.due_at, "the due time moved to the repeat's window");
    assert!(moved.due_at >= first.created_at.saturating_add(window), "due = now + window");
    assert_eq!(moved.state, TaskState::Created);

    let me = worker();
    let claimed = wait_for(Duration::from_secs(5), "the debounced task to be claimable", || async {
        ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await).pop()
    })
    .await;
    assert_eq!(claimed.id, id);
    assert!(claimed.started_at >= Some(claimed.due_at), "claimed before due: {claimed:?}");

    let out = ok("submit after claim", s.submit(ns, debounced("k1", hour, None, 3)).await);
    assert_eq!(out.outcome, SubmitOutcome::Created, "a key stops binding once its task is claimed");
    assert_ne!(out.id, id, "the new task is another task");
    let running = record(s, ns, &id).await;
    assert_eq!((running.state, payload(&running)), (TaskState::Running, json!({"n": 2})));
}

/// Debounce with `max_wait`: repeats never push the due time past
/// created + `max_wait`.
pub async fn debounce_max_wait_caps_postponement<S: Storage>(s: &S, ns: &Namespace) {
    let (window, max_wait) = (Duration::from_secs(60), Some(Duration::from_secs(120)));
    let id = created(s, ns, debounced("k2", window, max_wait, 1)).await;
    let first = record(s, ns, &id).await;
    assert_eq!(first.due_at, first.created_at.saturating_add(window));
    let long = Duration::from_secs(3_600);
    let out = ok("debounce repeat", s.submit(ns, debounced("k2", long, max_wait, 2)).await);
    assert_eq!((out.id.clone(), out.outcome), (id.clone(), SubmitOutcome::Debounced));
    let capped = record(s, ns, &id).await;
    assert_eq!(
        capped.due_at,
        first.created_at.saturating_add(Duration::from_secs(120)),
        "due = min(now + window, created_at + max_wait)"
    );
    assert_eq!(payload(&capped), json!({"n": 2}));
}

/// A delayed task is due at created + delay, is not claimed before, and is
/// claimed once due (no start before due).
pub async fn delayed_task_not_claimed_before_due<S: Storage>(s: &S, ns: &Namespace) {
    let delay = Duration::from_millis(300);
    let mut task = new_task("delayed");
    task.due = Due::After(delay);
    let id = submit(s, ns, task).await;
    let rec = record(s, ns, &id).await;
    assert_eq!(rec.due_at, rec.created_at.saturating_add(delay), "due = created + delay");
    let me = worker();
    let claimed = wait_for(Duration::from_secs(5), "the delayed task to be claimed once due", || async {
        ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await).pop()
    })
    .await;
    assert_eq!(claimed.id, id);
    let started = claimed.started_at.unwrap_or_default();
    assert!(started >= claimed.due_at, "claimed at {started}, before its due time {}", claimed.due_at);
}

/// `Due::At` keeps the exact time given; a time in the past is due at once.
pub async fn run_at<S: Storage>(s: &S, ns: &Namespace) {
    let at = Timestamp::now_system().saturating_add(Duration::from_millis(300));
    let mut task = new_task("run-at");
    task.due = Due::At(at);
    let id = submit(s, ns, task).await;
    assert_eq!(record(s, ns, &id).await.due_at, at, "due_at is the time given");
    let me = worker();
    let claimed = wait_for(Duration::from_secs(5), "the run_at task to be claimed", || async {
        ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await).pop()
    })
    .await;
    assert_eq!(claimed.id, id);
    assert!(claimed.started_at >= Some(at), "claimed at {:?}, before {at}", claimed.started_at);

    let past = Timestamp::now_system().saturating_sub(Duration::from_secs(3_600));
    let mut task = new_task("run-at-past");
    task.due = Due::At(past);
    let id = submit(s, ns, task).await;
    let claimed = ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await);
    assert_eq!(claimed.iter().map(|t| &t.id).collect::<Vec<_>>(), [&id], "a past run_at is due at once");
    assert_eq!(claimed.first().map(|t| t.due_at), Some(past));
}

/// The answers of a `submit_many`: id and outcome, or the id refused as a
/// duplicate.
fn answers(out: &[crate::Result<crate::Submitted>]) -> Vec<Result<(String, SubmitOutcome), String>> {
    out.iter()
        .map(|r| match r {
            Ok(sub) => Ok((sub.id.to_string(), sub.outcome)),
            Err(Error::DuplicateId(id)) => Err(id.to_string()),
            Err(e) => panic!("submit_many: unexpected error {e:?}"),
        })
        .collect()
}

/// `submit_many` answers every task in order, each on its own: a refused
/// duplicate does not stop the others.
pub async fn submit_many_answers_each_task<S: Storage>(s: &S, ns: &Namespace) {
    submit(s, ns, new_task("many-taken")).await;
    let mut idem = new_task("many-taken");
    idem.mode = SubmitMode::Idempotent;
    let tasks = vec![new_task("many-a"), new_task("many-taken"), new_task("many-b"), idem];
    let out = ok("submit_many", s.submit_many(ns, tasks).await);
    assert_eq!(out.len(), 4, "one answer per task: {out:?}");
    let summary = answers(&out);
    assert_eq!(
        summary,
        vec![
            Ok(("many-a".to_owned(), SubmitOutcome::Created)),
            Err("many-taken".to_owned()),
            Ok(("many-b".to_owned(), SubmitOutcome::Created)),
            Ok(("many-taken".to_owned(), SubmitOutcome::Existing)),
        ],
        "answers in order, each on its own"
    );
    for id in ["many-a", "many-b"] {
        assert_eq!(record(s, ns, &tid(id)).await.state, TaskState::Created, "{id} stored");
    }

    // One id twice in a batch of ids all new (no task under any of them
    // before the call): the second is a duplicate of the first, an
    // idempotent third finds it, and the task is stored once, as the first
    // said.
    let mut first = new_task("many-twice");
    first.payload = b"1".to_vec();
    let mut again = new_task("many-twice");
    again.payload = b"2".to_vec();
    let mut idem = new_task("many-twice");
    idem.mode = SubmitMode::Idempotent;
    let out = ok("submit_many", s.submit_many(ns, vec![first, new_task("many-c"), again, idem]).await);
    let summary = answers(&out);
    assert_eq!(
        summary,
        vec![
            Ok(("many-twice".to_owned(), SubmitOutcome::Created)),
            Ok(("many-c".to_owned(), SubmitOutcome::Created)),
            Err("many-twice".to_owned()),
            Ok(("many-twice".to_owned(), SubmitOutcome::Existing)),
        ],
        "an id repeated in one batch of new ids"
    );
    assert_eq!(
        record(s, ns, &tid("many-twice")).await.payload,
        b"1".to_vec(),
        "stored once, as the first said"
    );
}

/// Cancelling a debounced task frees its key: the next submit under the
/// key creates a new task.
pub async fn debounce_key_released_when_cancelled<S: Storage>(s: &S, ns: &Namespace) {
    let hour = Duration::from_secs(3_600);
    let first = created(s, ns, debounced("k3", hour, None, 1)).await;
    let other = ok("other key", s.submit(ns, debounced("k4", hour, None, 9)).await);
    assert_eq!(other.outcome, SubmitOutcome::Created, "another key is another task");
    ok("cancel", s.cancel(ns, &first).await);
    let out = ok("submit after cancel", s.submit(ns, debounced("k3", hour, None, 2)).await);
    assert_eq!(out.outcome, SubmitOutcome::Created, "a cancelled task frees its key");
    assert_ne!(out.id, first);
    let cancelled = record(s, ns, &first).await;
    assert_eq!((cancelled.state, payload(&cancelled)), (TaskState::Cancelled, json!({"n": 1})));
}

/// The payload limit users set lives in core, not in the store: the store
/// reports a hard cap of its own of at least [`crate::client::DEFAULT_MAX_PAYLOAD`],
/// and takes a payload past the default setting (but under its cap)
/// directly, reading it back byte for byte.
pub async fn payload_cap_is_the_stores_own<S: Storage>(s: &S, ns: &Namespace) {
    let cap = ok("max_payload", s.max_payload().await);
    assert!(
        cap >= crate::client::DEFAULT_MAX_PAYLOAD,
        "the store's own payload cap {cap} is below the default setting {}",
        crate::client::DEFAULT_MAX_PAYLOAD
    );
    let mut big = new_task("past-the-default");
    let text = "x".repeat(crate::client::DEFAULT_MAX_PAYLOAD);
    big.payload = serde_json::to_vec(&text).unwrap_or_else(|e| panic!("encoding a string: {e}"));
    let expected = big.payload.clone();
    ok("submit of a payload past the default setting", s.submit(ns, big).await);
    let rec = record(s, ns, &tid("past-the-default")).await;
    assert_eq!(rec.payload.len(), expected.len(), "payload length read back");
    assert!(rec.payload == expected, "payload read back differs from what was submitted");
}

/// A resend of a submit ([`NewTask::resend`](crate::storage::NewTask::resend),
/// or any clone: same id and nonce, as the client sends after a lost
/// answer) is answered as the first time, `Created`, and stores nothing
/// more; another submit of the id (a task built again) is still a duplicate
/// (plain) or the existing task (idempotent). The same for a debounced
/// submit and for a batch.
pub async fn resend_is_answered_as_the_first_submit<S: Storage>(s: &S, ns: &Namespace) {
    let first = new_task("resent");
    let again = first.resend();
    let other = new_task("resent");
    assert_ne!(other.nonce(), first.nonce(), "a task built again is another submit");
    assert_eq!(ok("submit", s.submit(ns, first).await).outcome, SubmitOutcome::Created);
    let out = ok("resend", s.submit(ns, again).await);
    assert_eq!((out.id.as_str(), out.outcome), ("resent", SubmitOutcome::Created), "a resend is Created");
    assert!(
        matches!(s.submit(ns, other.clone()).await, Err(crate::Error::DuplicateId(_))),
        "another submit of the id is a duplicate"
    );
    let mut idem = other;
    idem.mode = SubmitMode::Idempotent;
    assert_eq!(ok("idempotent", s.submit(ns, idem).await).outcome, SubmitOutcome::Existing);

    let d = debounced("resent-key", Duration::from_secs(3_600), None, 1);
    let d_again = d.resend();
    let id = created(s, ns, d).await;
    let out = ok("debounced resend", s.submit(ns, d_again).await);
    assert_eq!((out.id, out.outcome), (id, SubmitOutcome::Created), "a debounced resend is Created");

    let batch = vec![new_task("resent-a"), new_task("resent-b")];
    let batch_again: Vec<_> = batch.iter().map(crate::storage::NewTask::resend).collect();
    for r in ok("submit_many", s.submit_many(ns, batch).await) {
        assert_eq!(ok("batch item", r).outcome, SubmitOutcome::Created);
    }
    for r in ok("submit_many resend", s.submit_many(ns, batch_again).await) {
        assert_eq!(ok("resent batch item", r).outcome, SubmitOutcome::Created, "a resent batch is Created");
    }
    let counts = ok("counts", s.counts(ns).await);
    assert_eq!(counts.get(crate::TaskState::Created), 4, "four tasks, none twice: {counts:?}");
}
