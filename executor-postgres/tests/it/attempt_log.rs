//! The attempt log column on PostgreSQL: a hand-edited log (jsonb of the
//! wrong shape) never makes
//! a task unreadable nor stops a claim, retry, reap or requeue; the next
//! append keeps the entries that parse. Logged errors are bounded.

use std::time::Duration;

use executor_core::{
    AttemptOutcome, TaskId, TaskState, Timestamp, WorkerId,
    storage::{Finish, Storage, TierStorage},
    testing,
};
use executor_postgres::PostgresStorage;

use crate::support::{cleanup, fresh};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const LEASE: Duration = Duration::from_secs(60);

/// Writes `log` into the task's attempt log column by hand.
async fn damage(storage: &PostgresStorage, ns: &str, id: &str, log: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE reliable_executor_tasks SET attempt_log = $1::jsonb WHERE ns = $2 AND id = $3")
        .bind(log)
        .bind(ns)
        .bind(id)
        .execute(storage.pool())
        .await?;
    Ok(())
}

/// Hand edits (jsonb holds only JSON), and how many of their entries
/// still read.
const GARBAGE: [(&str, usize); 7] = [
    ("null", 0),
    (r#"{"attempt":1}"#, 0),
    (r#""failed""#, 0),
    ("[1, 2, 3]", 0),
    (r#"[{"attempt":"one","ended_at":"now","outcome":7}]"#, 0),
    (r#"[{"attempt":1,"ended_at":5,"outcome":"failed"}, null]"#, 1),
    (r#"[{"attempt":1e300,"ended_at":-1,"outcome":"failed"}]"#, 0),
];

#[tokio::test]
async fn a_corrupt_attempt_log_breaks_no_read_or_transition() -> TestResult {
    let (storage, ns) = fresh().await;
    for (n, (log, readable)) in GARBAGE.into_iter().enumerate() {
        let name = format!("bad-log-{n}");
        let id = TaskId::new(name.as_str())?;
        let mut task = testing::new_task(&name);
        task.max_attempts = 5;
        storage.submit(&ns, task).await?;
        damage(&storage, ns.as_str(), &name, log).await?;
        let got = storage.get(&ns, &id).await?.ok_or("vanished")?;
        assert_eq!(got.attempt_log.len(), readable, "{log:?}: get reads what parses");
        let tier = storage.due_before(&ns, Timestamp::MAX, 10).await?;
        assert_eq!(tier.iter().map(|r| r.attempt_log.len()).collect::<Vec<_>>(), [readable], "{log:?}");

        let claimed = storage.claim(&ns, &WorkerId::generate(), 1, LEASE).await?;
        let lease = claimed.first().and_then(|r| r.lease()).ok_or_else(|| format!("{log:?}: not claimed"))?;
        let retry = Finish::Retry { delay: Duration::ZERO, error: "again".into() };
        assert_eq!(storage.finish(&ns, &lease, retry).await?, TaskState::Pending, "{log:?}");
        let r = storage.get(&ns, &id).await?.ok_or("vanished")?;
        let last = r.attempt_log.last().map(|a| (a.attempt, a.outcome, a.error.clone()));
        assert_eq!(
            last,
            Some((1, AttemptOutcome::Failed, Some("again".into()))),
            "{log:?}: {:?}",
            r.attempt_log
        );
        assert_eq!(r.attempt_log.len(), readable + 1, "{log:?}: the parsable entries are kept");

        damage(&storage, ns.as_str(), &name, log).await?;
        let claimed = storage.claim(&ns, &WorkerId::generate(), 1, Duration::from_millis(100)).await?;
        assert_eq!(claimed.len(), 1, "{log:?}: claimed again");
        let id_ref = &id;
        let (s, nsr) = (&storage, &ns);
        testing::wait_until(Duration::from_secs(5), || async move {
            let _ = s.reap(nsr, 10).await;
            s.get(nsr, id_ref).await.ok().flatten().is_some_and(|r| r.state == TaskState::Pending)
        })
        .await;
        let r = storage.get(&ns, &id).await?.ok_or("vanished")?;
        assert_eq!(r.attempt_log.last().map(|a| a.outcome), Some(AttemptOutcome::LeaseExpired), "{log:?}");

        damage(&storage, ns.as_str(), &name, log).await?;
        let claimed = storage.claim(&ns, &WorkerId::generate(), 1, LEASE).await?;
        let lease = claimed.first().and_then(|r| r.lease()).ok_or_else(|| format!("{log:?}: not claimed"))?;
        storage.finish(&ns, &lease, Finish::Failed { error: "dead".into() }).await?;
        storage.requeue(&ns, &id).await?;
        let r = storage.get(&ns, &id).await?.ok_or("vanished")?;
        assert_eq!(r.state, TaskState::Pending, "{log:?}");
        let last = r.attempt_log.last().map(|a| (a.attempt, a.outcome, a.error.clone()));
        assert_eq!(last, Some((3, AttemptOutcome::Dead, Some("dead".into()))), "{log:?}");
        // Out of the way of the next round's claims.
        storage.delete(&ns, &id).await?;
    }
    cleanup(&storage, &ns).await;
    Ok(())
}

/// An error longer than the log keeps is cut to 8,192 characters;
/// `last_error` keeps what the store was given (up to its own limit).
#[tokio::test]
async fn logged_errors_are_bounded() -> TestResult {
    let (storage, ns) = fresh().await;
    let id = TaskId::new("long")?;
    storage.submit(&ns, testing::new_task("long")).await?;
    let claimed = storage.claim(&ns, &WorkerId::generate(), 1, LEASE).await?;
    let lease = claimed.first().and_then(|r| r.lease()).ok_or("not claimed")?;
    let long = "é".repeat(10_000);
    storage.finish(&ns, &lease, Finish::Retry { delay: Duration::ZERO, error: long.clone() }).await?;
    let r = storage.get(&ns, &id).await?.ok_or("vanished")?;
    let logged = r.attempt_log.first().and_then(|a| a.error.clone()).unwrap_or_default();
    assert_eq!(logged.chars().count(), 8_192);
    assert!(long.starts_with(&logged));
    assert_eq!(r.last_error.as_deref(), Some(long.as_str()));
    cleanup(&storage, &ns).await;
    Ok(())
}
