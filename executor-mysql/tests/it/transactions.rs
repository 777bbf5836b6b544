//! Transactional submits (`submit_in`) on MySQL/MariaDB: the task exists if
//! and only if the caller's transaction commits; claimers see it at their
//! next poll (MySQL has no notification on commit).

use std::{collections::BTreeSet, time::Duration};

use executor_core::{
    Error, QueueName, SubmitOutcome,
    storage::{Debounce, Storage, SubmitMode},
    testing,
};

use executor_sql::testing::transactions::{Orders, claim_all};

use crate::support::{cleanup, fresh, storage};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_submit_exists_once_committed_and_is_seen_by_the_next_poll() -> TestResult {
    let (s, ns) = fresh().await;
    let orders = Orders::create(&s, &ns).await?;
    let other = storage().await;
    let waiter = {
        let (other, ns) = (other.clone(), ns.clone());
        tokio::spawn(async move {
            other.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(50)).await
        })
    };
    let mut tx = s.pool().begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(orders.insert())).bind(1_i64).execute(&mut *tx).await?;
    let submitted = s.submit_in(&mut tx, &ns, testing::new_task("order-1")).await?;
    assert_eq!(submitted.outcome, SubmitOutcome::Created);
    assert!(other.get(&ns, &submitted.id).await?.is_none(), "visible before the commit");
    assert!(
        claim_all(&other, &ns, 1, Duration::from_millis(200)).await.is_empty(),
        "claimed before the commit"
    );
    tx.commit().await?;
    // The other storage's poll (250 ms at most by default) finds it.
    tokio::time::timeout(Duration::from_secs(5), waiter).await???;
    assert_eq!(claim_all(&other, &ns, 1, Duration::from_secs(5)).await, vec!["order-1".to_owned()]);
    assert_eq!(orders.ids().await?, BTreeSet::from([1]));
    orders.drop_table().await;
    cleanup(&s, &ns).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_submits_keep_their_meaning_and_debounce_is_refused_in_a_transaction() -> TestResult {
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
    let mut debounced = testing::new_task("deb-1");
    debounced.mode = SubmitMode::Debounce(Debounce::new("key", Duration::from_secs(60)));
    assert!(matches!(s.submit_in(&mut tx, &ns, debounced).await, Err(Error::Unsupported { .. })));
    assert_eq!(s.submit_in(&mut tx, &ns, testing::new_task("fresh")).await?.outcome, SubmitOutcome::Created);
    tx.commit().await?;
    assert_eq!(s.counts(&ns).await?.total(), 2, "taken and fresh");
    cleanup(&s, &ns).await;
    Ok(())
}
