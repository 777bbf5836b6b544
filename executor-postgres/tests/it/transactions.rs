//! Transactional submits (`submit_in`) and the wake-up on commit: the task
//! exists if and only if the caller's transaction commits.

use std::{collections::BTreeSet, time::Duration};

use executor_core::{
    Error, QueueName, SubmitOutcome,
    storage::{Debounce, Storage, SubmitMode},
    testing,
};
use reliable_executor_postgres::{PostgresOptions, PostgresStorage};

use executor_sql::testing::transactions::{Orders, claim_all};

use crate::support::{cleanup, fresh, pool};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A storage whose waits only end by notification: its poll is a minute.
async fn deaf_to_polls() -> PostgresStorage {
    match PostgresOptions::new()
        .max_connections(3)
        .poll_interval(Duration::from_secs(60), Duration::from_secs(60))
        .open(pool(6).await)
        .await
    {
        Ok(s) => s,
        Err(e) => crate::support::down(e),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_submit_exists_and_wakes_a_waiter_in_another_storage() -> TestResult {
    let (s, ns) = fresh().await;
    let orders = Orders::create(&s, &ns).await?;
    let other = deaf_to_polls().await;
    // The other storage (another process, as far as wake-ups go: its own
    // pool and listener) waits; only a notification can end the wait early.
    let waiter = {
        let (other, ns) = (other.clone(), ns.clone());
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            other
                .wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(50))
                .await
                .map(|()| started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut tx = s.pool().begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(orders.insert())).bind(1_i64).execute(&mut *tx).await?;
    let submitted = s.submit_in(&mut tx, &ns, testing::new_task("order-1")).await?;
    assert_eq!(submitted.outcome, SubmitOutcome::Created);
    // Not visible outside the transaction before the commit.
    assert!(other.get(&ns, &submitted.id).await?.is_none(), "visible before the commit");
    assert!(
        claim_all(&other, &ns, 1, Duration::from_millis(200)).await.is_empty(),
        "claimed before the commit"
    );
    assert!(!waiter.is_finished(), "woken before the commit");
    tx.commit().await?;

    let woke_after = tokio::time::timeout(Duration::from_secs(20), waiter).await???;
    assert!(woke_after < Duration::from_secs(30), "woken by the poll, not the commit: {woke_after:?}");
    assert_eq!(claim_all(&other, &ns, 1, Duration::from_secs(5)).await, vec!["order-1".to_owned()]);
    assert_eq!(orders.ids().await?, BTreeSet::from([1]));
    orders.drop_table().await;
    cleanup(&s, &ns).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_and_debounced_submits_keep_their_meaning_in_a_transaction() -> TestResult {
    let (s, ns) = fresh().await;
    s.submit(&ns, testing::new_task("taken")).await?;
    let mut tx = s.pool().begin().await?;
    // A plain submit of a taken id is refused, and the transaction goes on.
    let mut dup = testing::new_task("taken");
    match s.submit_in(&mut tx, &ns, dup.clone()).await {
        Err(Error::DuplicateId(id)) => assert_eq!(id.as_str(), "taken"),
        other => panic!("expected DuplicateId, got {other:?}"),
    }
    dup.mode = SubmitMode::Idempotent;
    assert_eq!(s.submit_in(&mut tx, &ns, dup).await?.outcome, SubmitOutcome::Existing);
    let mut first = testing::new_task("deb-1");
    first.mode = SubmitMode::Debounce(Debounce::new("key", Duration::from_secs(60)));
    let mut second = testing::new_task("deb-2");
    second.mode = SubmitMode::Debounce(Debounce::new("key", Duration::from_secs(60)));
    second.payload = br#"{"n":2}"#.to_vec();
    assert_eq!(s.submit_in(&mut tx, &ns, first).await?.outcome, SubmitOutcome::Created);
    let moved = s.submit_in(&mut tx, &ns, second).await?;
    assert_eq!((moved.id.as_str(), moved.outcome), ("deb-1", SubmitOutcome::Debounced));
    tx.commit().await?;
    let task = s.get(&ns, &moved.id).await?.ok_or("debounced task missing")?;
    assert_eq!(task.payload, br#"{"n":2}"#.to_vec());
    assert_eq!(s.counts(&ns).await?.total(), 2);
    cleanup(&s, &ns).await;
    Ok(())
}
