//! Checks of the attempt log ([`TaskRecord::attempt_log`]): which
//! transitions write an entry, what it holds, and its bound.

use std::time::Duration;

use crate::{
    Namespace, TaskId, TaskRecord, TaskState, Timestamp, WorkerId,
    attempt_log::{AttemptOutcome, AttemptRecord, MAX_ATTEMPT_LOG},
    queue::ClaimPlan,
    storage::{Finish, Storage, TierStorage},
};

use super::{
    new_task,
    support::{LONG_LEASE, claim_only, lease, ok, record, submit, worker},
    wait_until,
};

/// Claims `id` (the only due task) and ends the attempt with a retry due at
/// once, recording `error`; returns the claimed record.
async fn claim_and_retry<S: Storage>(s: &S, ns: &Namespace, id: &TaskId, error: &str) -> TaskRecord {
    let claimed = claim_only(s, ns, id, LONG_LEASE).await;
    let finish = Finish::Retry { delay: Duration::ZERO, error: error.to_owned() };
    let state = ok("finish retry", s.finish(ns, &lease(&claimed), finish).await);
    assert_eq!(state, TaskState::Pending, "a retry waits again");
    claimed
}

/// Asserts that `entry` describes the attempt `claimed` started and that
/// ended with `outcome` and `error`.
#[track_caller]
fn assert_entry(entry: &AttemptRecord, claimed: &TaskRecord, outcome: AttemptOutcome, error: &str) {
    assert_eq!(entry.attempt, claimed.attempts, "attempt number: {entry:?}");
    assert_eq!(entry.outcome, outcome, "outcome: {entry:?}");
    assert_eq!(entry.error.as_deref(), Some(error), "error: {entry:?}");
    assert_eq!(entry.worker, claimed.worker, "the worker that ran it: {entry:?}");
    assert_eq!(entry.started_at, claimed.started_at, "its start is the claim's: {entry:?}");
    let started = entry.started_at.unwrap_or_else(|| panic!("no start in {entry:?}"));
    assert!(started <= entry.ended_at, "started after it ended: {entry:?}");
}

/// A task that fails twice, is released and postponed in between (neither
/// logged), then succeeds: two `failed` entries for attempts 1 and 2 with
/// their errors, workers and times, and the record's own fields describe
/// attempt 3. A task that succeeds at once has an empty log.
pub async fn attempt_log_keeps_retried_attempts<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("log-retried")).await;
    let first = claim_and_retry(s, ns, &id, "first: connection refused").await;

    let released = claim_only(s, ns, &id, LONG_LEASE).await;
    ok("release", s.finish(ns, &lease(&released), Finish::Released).await);
    let postponed = claim_only(s, ns, &id, LONG_LEASE).await;
    let postpone = Finish::Postponed { delay: Duration::ZERO, error: "no handler here".to_owned() };
    ok("postpone", s.finish(ns, &lease(&postponed), postpone).await);
    let r = record(s, ns, &id).await;
    assert_eq!(r.attempt_log.len(), 1, "releases and postponements log nothing: {:?}", r.attempt_log);

    let second = claim_and_retry(s, ns, &id, "second: 503").await;
    let third = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!(third.attempts, 3, "released and postponed attempts are not counted");
    let running = record(s, ns, &id).await;
    let story = running.all_attempts();
    assert_eq!(
        story.iter().map(|a| (a.attempt, a.outcome)).collect::<Vec<_>>(),
        [(1, AttemptOutcome::Failed), (2, AttemptOutcome::Failed), (3, AttemptOutcome::Running)],
        "the story while attempt 3 runs"
    );
    ok("complete", s.finish(ns, &lease(&third), Finish::Completed).await);

    let r = record(s, ns, &id).await;
    assert_eq!(r.attempt_log.len(), 2, "two retried attempts: {:?}", r.attempt_log);
    assert_entry(&r.attempt_log[0], &first, AttemptOutcome::Failed, "first: connection refused");
    assert_entry(&r.attempt_log[1], &second, AttemptOutcome::Failed, "second: 503");
    assert!(r.attempt_log[0].ended_at <= r.attempt_log[1].started_at.unwrap_or_default(), "in order");
    assert_eq!((r.state, r.attempts, r.started_at), (TaskState::Completed, 3, third.started_at), "attempt 3");
    let last = r.all_attempts().pop().unwrap_or_else(|| panic!("no attempts in {r:?}"));
    assert_eq!((last.attempt, last.outcome, last.ended_at), (3, AttemptOutcome::Completed, r.finished_at));

    let once = submit(s, ns, new_task("log-once")).await;
    let claimed = claim_only(s, ns, &once, LONG_LEASE).await;
    ok("complete", s.finish(ns, &lease(&claimed), Finish::Completed).await);
    let r = record(s, ns, &once).await;
    assert!(r.attempt_log.is_empty(), "a first-time success logs nothing: {:?}", r.attempt_log);
    assert_eq!(r.all_attempts().len(), 1, "its story is its one attempt");
}

/// Retries ended by `finish_many` are logged per item, like single finishes;
/// the batch's completions log nothing.
pub async fn attempt_log_written_by_finish_many<S: Storage>(s: &S, ns: &Namespace) {
    let ids = submit_all(s, ns, &["log-batch-a", "log-batch-b", "log-batch-c", "log-batch-d"]).await;
    let w = worker();
    let claimed = std::sync::Mutex::new(Vec::new());
    let claimed = &claimed;
    // A partitioned store may answer one claim from some partitions only.
    wait_until(Duration::from_secs(5), || {
        let w = &w;
        async move {
            let got = ok("claim", s.claim(ns, w, &ClaimPlan::default_queue(4), LONG_LEASE).await);
            let mut all = claimed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            all.extend(got);
            all.len() >= 4
        }
    })
    .await;
    let claimed = std::mem::take(&mut *claimed.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    assert_eq!(claimed.len(), ids.len(), "every task claimed once");
    let items = claimed
        .iter()
        .map(|c| {
            let finish = if c.id.as_str().ends_with(['a', 'c']) {
                Finish::Retry { delay: Duration::from_secs(3_600), error: format!("{} failed", c.id) }
            } else {
                Finish::Completed
            };
            (lease(c), finish)
        })
        .collect();
    let answers = ok("finish_many", s.finish_many(ns, items).await);
    assert!(answers.iter().all(Result::is_ok), "every item lands: {answers:?}");
    for c in &claimed {
        let r = record(s, ns, &c.id).await;
        if c.id.as_str().ends_with(['a', 'c']) {
            assert_eq!(r.attempt_log.len(), 1, "{}: {:?}", c.id, r.attempt_log);
            assert_entry(&r.attempt_log[0], c, AttemptOutcome::Failed, &format!("{} failed", c.id));
        } else {
            assert!(r.attempt_log.is_empty(), "{}: a completion logs nothing: {:?}", c.id, r.attempt_log);
        }
    }
}

async fn submit_all<S: Storage>(s: &S, ns: &Namespace, ids: &[&str]) -> Vec<TaskId> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        out.push(submit(s, ns, new_task(id)).await);
    }
    out
}

/// A lease the reaper takes back, with attempts left, logs the lost
/// attempt as `lease_expired` with the worker that held it.
pub async fn attempt_log_keeps_reaped_attempts<S: Storage>(s: &S, ns: &Namespace) {
    let id = submit(s, ns, new_task("log-reaped")).await;
    let held_by: WorkerId = worker();
    let mut claimed =
        ok("claim", s.claim(ns, &held_by, &ClaimPlan::default_queue(1), Duration::from_millis(200)).await);
    let claimed = claimed.pop().unwrap_or_else(|| panic!("log-reaped was not claimed"));
    assert_eq!(claimed.worker.as_ref(), Some(&held_by));
    let id_ref = &id;
    wait_until(Duration::from_secs(5), || async move {
        ok("reap", s.reap(ns, 10).await);
        record(s, ns, id_ref).await.state == TaskState::Pending
    })
    .await;
    let r = record(s, ns, &id).await;
    assert_eq!(r.attempt_log.len(), 1, "the reaped attempt: {:?}", r.attempt_log);
    let entry = &r.attempt_log[0];
    let reason = entry.error.clone().unwrap_or_default();
    assert!(reason.contains("lease expired"), "error {reason:?}");
    assert_entry(entry, &claimed, AttemptOutcome::LeaseExpired, &reason);
    assert!(entry.ended_at >= claimed.lease_until.unwrap_or_default(), "ended when the lease was taken back");
    let again = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!(again.attempts, 2);
    let story: Vec<_> =
        record(s, ns, &id).await.all_attempts().iter().map(|a| (a.attempt, a.outcome)).collect();
    assert_eq!(story, [(1, AttemptOutcome::LeaseExpired), (2, AttemptOutcome::Running)]);
}

/// Requeue of a dead-lettered task keeps the attempt that dead-lettered it
/// (`dead`, with its error) after the retried ones; the count starts again.
pub async fn attempt_log_requeue_keeps_the_dead_attempt<S: Storage>(s: &S, ns: &Namespace) {
    let mut task = new_task("log-requeued");
    task.max_attempts = 2;
    let id = submit(s, ns, task).await;
    let first = claim_and_retry(s, ns, &id, "first try").await;
    let last = claim_only(s, ns, &id, LONG_LEASE).await;
    let dead = Finish::Failed { error: "gave up".to_owned() };
    assert_eq!(ok("fail", s.finish(ns, &lease(&last), dead).await), TaskState::Failed);
    let failed = record(s, ns, &id).await;
    assert_eq!(failed.attempt_log.len(), 1, "a dead letter logs nothing until requeued");
    let story: Vec<_> = failed.all_attempts().iter().map(|a| (a.attempt, a.outcome)).collect();
    assert_eq!(story, [(1, AttemptOutcome::Failed), (2, AttemptOutcome::Dead)], "the dead task's story");

    ok("requeue", s.requeue(ns, &id).await);
    let r = record(s, ns, &id).await;
    assert_eq!((r.state, r.attempts), (TaskState::Pending, 0));
    assert_eq!(r.attempt_log.len(), 2, "{:?}", r.attempt_log);
    assert_entry(&r.attempt_log[0], &first, AttemptOutcome::Failed, "first try");
    let entry = &r.attempt_log[1];
    assert_eq!((entry.attempt, entry.outcome), (2, AttemptOutcome::Dead), "{entry:?}");
    assert_eq!(entry.error.as_deref(), Some("gave up"));
    assert_eq!(entry.started_at, last.started_at, "{entry:?}");
    assert_eq!(Some(entry.ended_at), failed.finished_at, "it ended when it dead-lettered");
    assert_eq!(r.all_attempts().len(), 2, "nothing runs yet");

    let again = claim_only(s, ns, &id, LONG_LEASE).await;
    assert_eq!(again.attempts, 1, "the count starts again");
    let story: Vec<_> =
        record(s, ns, &id).await.all_attempts().iter().map(|a| (a.attempt, a.outcome)).collect();
    assert_eq!(story, [(1, AttemptOutcome::Failed), (2, AttemptOutcome::Dead), (1, AttemptOutcome::Running)]);
}

/// More than [`MAX_ATTEMPT_LOG`] retries keep the newest, numbers
/// consecutive, the oldest dropped.
pub async fn attempt_log_keeps_the_newest<S: Storage>(s: &S, ns: &Namespace) {
    let retries = u32::try_from(MAX_ATTEMPT_LOG).unwrap_or(u32::MAX) + 3;
    let mut task = new_task("log-bounded");
    task.max_attempts = retries + 1;
    let id = submit(s, ns, task).await;
    for n in 1..=retries {
        claim_and_retry(s, ns, &id, &format!("failure {n}")).await;
    }
    let r = record(s, ns, &id).await;
    assert_eq!(r.attempt_log.len(), MAX_ATTEMPT_LOG, "bounded");
    let numbers: Vec<u32> = r.attempt_log.iter().map(|a| a.attempt).collect();
    let expected: Vec<u32> = (4..=retries).collect();
    assert_eq!(numbers, expected, "the newest, consecutive");
    for a in &r.attempt_log {
        assert_eq!(a.error.as_deref(), Some(format!("failure {}", a.attempt).as_str()), "{a:?}");
    }
}

/// For a store whose attempt log can be edited by hand (a SQL column): for
/// each `(log, readable)` of `garbage`, `damage(id, log)` writes `log` into
/// a task's stored log, and then reads show the
/// `readable` entries that parse (`get` and `due_before` alike), and a
/// claim, a retry, a reap and a requeue each still work and append their
/// entry after those. Not in a
/// conformance macro: only the driver's own tests know how to damage.
pub async fn corrupt_attempt_log_breaks_nothing<S, D, Fut>(
    s: &S,
    ns: &Namespace,
    damage: D,
    garbage: &[(&str, usize)],
) where
    S: TierStorage,
    D: Fn(String, String) -> Fut,
    Fut: Future<Output = ()>,
{
    for (n, (log, readable)) in garbage.iter().copied().enumerate() {
        let name = format!("bad-log-{n}");
        let mut task = new_task(&name);
        task.max_attempts = 5;
        let id = submit(s, ns, task).await;
        damage(name.clone(), log.to_owned()).await;
        let got = record(s, ns, &id).await;
        assert_eq!(got.attempt_log.len(), readable, "{log:?}: get reads what parses");
        let tier = ok("due_before", s.due_before(ns, Timestamp::MAX, 10).await);
        assert_eq!(tier.iter().map(|r| r.attempt_log.len()).collect::<Vec<_>>(), [readable], "{log:?}");

        let claimed = claim_and_retry(s, ns, &id, "again").await;
        let r = record(s, ns, &id).await;
        let last = r.attempt_log.last().map(|a| (a.attempt, a.outcome, a.error.clone()));
        assert_eq!(last, Some((claimed.attempts, AttemptOutcome::Failed, Some("again".into()))), "{log:?}");
        assert_eq!(r.attempt_log.len(), readable + 1, "{log:?}: the parsable entries are kept");

        damage(name.clone(), log.to_owned()).await;
        let got = ok(
            "claim",
            s.claim(ns, &worker(), &ClaimPlan::default_queue(1), Duration::from_millis(100)).await,
        );
        assert_eq!(got.len(), 1, "{log:?}: claimed again");
        wait_until(Duration::from_secs(5), || async {
            let _ = s.reap(ns, 10).await;
            s.get(ns, &id).await.ok().flatten().is_some_and(|r| r.state == TaskState::Pending)
        })
        .await;
        let r = record(s, ns, &id).await;
        assert_eq!(r.attempt_log.last().map(|a| a.outcome), Some(AttemptOutcome::LeaseExpired), "{log:?}");

        damage(name.clone(), log.to_owned()).await;
        let claimed = claim_only(s, ns, &id, LONG_LEASE).await;
        ok("fail", s.finish(ns, &lease(&claimed), Finish::Failed { error: "dead".into() }).await);
        ok("requeue", s.requeue(ns, &id).await);
        let r = record(s, ns, &id).await;
        assert_eq!(r.state, TaskState::Pending, "{log:?}");
        let last = r.attempt_log.last().map(|a| (a.attempt, a.outcome, a.error.clone()));
        assert_eq!(last, Some((3, AttemptOutcome::Dead, Some("dead".into()))), "{log:?}");
        // Out of the way of the next round's claims.
        ok("delete", s.delete(ns, &id).await);
    }
}

/// An error longer than the log keeps is cut to `chars` characters in the
/// log; `last_error` keeps what the store was given.
pub async fn logged_errors_are_cut_to<S: Storage>(s: &S, ns: &Namespace, chars: usize) {
    let id = submit(s, ns, new_task("long")).await;
    let long = "é".repeat(chars + 1_000);
    let claimed = claim_only(s, ns, &id, LONG_LEASE).await;
    let finish = Finish::Retry { delay: Duration::ZERO, error: long.clone() };
    ok("retry", s.finish(ns, &lease(&claimed), finish).await);
    let r = record(s, ns, &id).await;
    let logged = r.attempt_log.first().and_then(|a| a.error.clone()).unwrap_or_default();
    assert_eq!(logged.chars().count(), chars);
    assert!(long.starts_with(&logged));
    assert_eq!(r.last_error.as_deref(), Some(long.as_str()));
}
