//! Namespaces split into 3 partitions (separate hash tags) on the standalone
//! Redis of `REDIS_URL`: the conformance suite, less three checks whose rule
//! is per partition by design (see docs/redis.md, Partitions), plus checks
//! of rotation and of debounce within a partition.

use std::{collections::BTreeSet, time::Duration};

use executor_core::{
    Namespace, SubmitOutcome, WorkerId,
    storage::{Debounce, Storage, SubmitMode},
    testing,
};
use executor_redis::RedisStorage;

use crate::common;

async fn fresh() -> (RedisStorage, Namespace) {
    let url = common::url();
    let storage = common::connect_with(RedisStorage::builder(&url).partitions(3), &url).await;
    (storage, testing::unique_namespace("redis-p3"))
}

// Not run here: `claim_orders_by_due_and_respects_limit` (earliest due first
// holds within a partition, not across), and
// `debounce_moves_due_and_replaces_payload` and
// `debounce_max_wait_caps_postponement` (they debounce two different ids
// under one key, which coalesce only when the ids share a partition).
executor_core::storage_conformance_tests!(
    fresh,
    common::cleanup,
    except(
        claim_orders_by_due_and_respects_limit,
        debounce_moves_due_and_replaces_payload,
        debounce_max_wait_caps_postponement,
    )
);

/// The storage's partition function (FNV-1a of the id), repeated here.
fn partition_of(id: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in id.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash % 3
}

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn claims_rotate_over_partitions_and_nothing_starves() -> TestResult {
    let (storage, ns) = fresh().await;
    let tasks: Vec<_> = (0..300).map(|i| testing::new_task(&format!("t{i}"))).collect();
    for r in storage.submit_many(&ns, tasks).await? {
        r?;
    }
    let worker = WorkerId::generate();
    let mut seen = BTreeSet::new();
    let mut first_partitions = Vec::new();
    for round in 0..40 {
        let batch = storage.claim(&ns, &worker, 10, Duration::from_secs(60)).await?;
        let partitions: BTreeSet<u32> = batch.iter().map(|t| partition_of(t.id.as_str())).collect();
        if round < 3 {
            assert_eq!(partitions.len(), 1, "a claim of 10 fits in one partition of ~100");
            first_partitions.extend(partitions);
        }
        for t in &batch {
            assert!(seen.insert(t.id.clone()), "{} claimed twice", t.id);
        }
    }
    assert_eq!(seen.len(), 300, "every task claimed exactly once");
    first_partitions.sort();
    assert_eq!(first_partitions, [0, 1, 2], "three claims in a row start at three partitions");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn debounce_with_a_stable_id_coalesces() -> TestResult {
    let (storage, ns) = fresh().await;
    let mut task = testing::new_task("per-user-7");
    task.mode = SubmitMode::Debounce(Debounce::new("user-7", Duration::from_secs(30)));
    assert_eq!(storage.submit(&ns, task.clone()).await?.outcome, SubmitOutcome::Created);
    task.mode = SubmitMode::Debounce(
        Debounce::new("user-7", Duration::from_secs(30)).max_wait(Duration::from_secs(5)),
    );
    task.payload = br#"{"n":2}"#.to_vec();
    assert_eq!(storage.submit(&ns, task.clone()).await?.outcome, SubmitOutcome::Debounced);
    let rec = storage.get(&ns, &task.id).await?.ok_or("task vanished")?;
    assert_eq!(rec.payload, br#"{"n":2}"#.to_vec());
    assert!(rec.due_at <= rec.created_at.saturating_add(Duration::from_secs(5)), "max_wait caps the delay");
    assert_eq!(storage.counts(&ns).await?.total(), 1);
    common::cleanup(&storage, &ns).await;
    Ok(())
}
