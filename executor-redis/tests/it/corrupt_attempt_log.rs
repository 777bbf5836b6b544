//! A hand-damaged attempt log (field `y`) never makes a task unreadable nor
//! stops a transition: `get` and `due_before` read it as empty or keep the
//! entries that parse, claims ignore it, and the next retry, reap or
//! requeue replaces it with a log that parses, holding the new entry.

use std::time::Duration;

use executor_core::{
    TaskId, TaskState, Timestamp, WorkerId,
    attempt_log::AttemptOutcome,
    queue::ClaimPlan,
    storage::{Finish, Storage, TierStorage},
    testing,
};
use fred::{interfaces::HashesInterface, types::Value};

use crate::common::corrupt::{Damage, TestResult};

const LEASE: Duration = Duration::from_secs(60);

/// What a hand edit may leave in `y`, and how many entries still read.
fn garbage() -> Vec<(&'static str, Value, usize)> {
    vec![
        ("not JSON", Value::from("[{not json"), 0),
        ("an object", Value::from(r#"{"attempt":1}"#), 0),
        ("a string", Value::from(r#""failed""#), 0),
        ("numbers", Value::from("[1, 2, 3]"), 0),
        ("wrong field types", Value::from(r#"[{"attempt":"one","ended_at":"now","outcome":7}]"#), 0),
        ("one good entry", Value::from(r#"[{"attempt":1,"ended_at":5,"outcome":"failed"}, null]"#), 1),
        ("huge numbers", Value::from(r#"[{"attempt":1e300,"ended_at":-1,"outcome":"failed"}]"#), 0),
        ("not UTF-8", Value::Bytes(vec![0x5b, 0xff, 0xfe, 0x5d].into()), 0),
        ("empty", Value::from(""), 0),
    ]
}

#[tokio::test]
async fn a_corrupt_attempt_log_breaks_no_read_or_transition() -> TestResult {
    for (what, value, readable) in garbage() {
        let d = Damage::new("log-bad").await;
        let id = TaskId::new("a")?;
        let mut task = testing::new_task("a");
        task.max_attempts = 5;
        d.storage.submit(&d.ns, task).await?;
        let _: () = d.redis.hset(d.task_key("a"), ("y", value.clone())).await?;

        let got = d.storage.get(&d.ns, &id).await?.ok_or("task a vanished")?;
        assert_eq!(got.attempt_log.len(), readable, "{what}: get reads what parses");
        let tier = d.storage.due_before(&d.ns, Timestamp::MAX, 10).await?;
        assert_eq!(
            tier.iter().map(|r| r.attempt_log.len()).collect::<Vec<_>>(),
            [readable],
            "{what}: due_before"
        );

        let claimed =
            d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), LEASE).await?;
        let lease = claimed.first().and_then(|r| r.lease()).ok_or_else(|| format!("{what}: not claimed"))?;
        let retry = Finish::Retry { delay: Duration::ZERO, error: "again".into() };
        assert_eq!(d.storage.finish(&d.ns, &lease, retry).await?, TaskState::Pending, "{what}");
        let r = d.storage.get(&d.ns, &id).await?.ok_or("task a vanished")?;
        let last = r.attempt_log.last().map(|a| (a.attempt, a.outcome, a.error.clone()));
        assert_eq!(
            last,
            Some((1, AttemptOutcome::Failed, Some("again".into()))),
            "{what}: {:?}",
            r.attempt_log
        );
        assert_eq!(r.attempt_log.len(), readable + 1, "{what}: the parsable entries are kept");

        // Damaged again: a reap and a requeue still go through.
        let _: () = d.redis.hset(d.task_key("a"), ("y", value.clone())).await?;
        let claimed = d
            .storage
            .claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::from_millis(100))
            .await?;
        assert_eq!(claimed.len(), 1, "{what}: claimed again");
        testing::wait_until(Duration::from_secs(5), || async {
            d.storage.reap(&d.ns, 10).await.map(|r| r.retried.len()).unwrap_or(0) == 1
        })
        .await;
        let r = d.storage.get(&d.ns, &id).await?.ok_or("task a vanished")?;
        assert_eq!(r.attempt_log.last().map(|a| a.outcome), Some(AttemptOutcome::LeaseExpired), "{what}");

        let _: () = d.redis.hset(d.task_key("a"), ("y", value)).await?;
        let claimed =
            d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), LEASE).await?;
        let lease = claimed.first().and_then(|r| r.lease()).ok_or_else(|| format!("{what}: not claimed"))?;
        d.storage.finish(&d.ns, &lease, Finish::Failed { error: "dead".into() }).await?;
        d.storage.requeue(&d.ns, &id).await?;
        let r = d.storage.get(&d.ns, &id).await?.ok_or("task a vanished")?;
        assert_eq!(r.state, TaskState::Pending, "{what}");
        let last = r.attempt_log.last().map(|a| (a.attempt, a.outcome, a.error.clone()));
        assert_eq!(last, Some((3, AttemptOutcome::Dead, Some("dead".into()))), "{what}");
        d.assert_counts_exact().await?;
        d.cleanup().await;
    }
    Ok(())
}

/// An error longer than the log keeps is cut at a character boundary;
/// `last_error` keeps what the store was given.
#[tokio::test]
async fn logged_errors_are_bounded() -> TestResult {
    let d = Damage::new("log-long").await;
    let id = TaskId::new("a")?;
    d.storage.submit(&d.ns, testing::new_task("a")).await?;
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), LEASE).await?;
    let lease = claimed.first().and_then(|r| r.lease()).ok_or("not claimed")?;
    let long = "é".repeat(executor_core::attempt_log::MAX_ERROR_LEN);
    d.storage.finish(&d.ns, &lease, Finish::Retry { delay: Duration::ZERO, error: long.clone() }).await?;
    let r = d.storage.get(&d.ns, &id).await?.ok_or("task a vanished")?;
    let logged = r.attempt_log.first().and_then(|a| a.error.clone()).unwrap_or_default();
    assert!(
        logged.len() <= executor_core::attempt_log::MAX_ERROR_LEN
            && logged.len() >= executor_core::attempt_log::MAX_ERROR_LEN - 1
    );
    assert!(long.starts_with(&logged), "a prefix of the error, on a character boundary");
    assert_eq!(r.last_error.as_deref(), Some(long.as_str()));
    d.cleanup().await;
    Ok(())
}
