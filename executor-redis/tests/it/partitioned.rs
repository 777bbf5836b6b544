//! Namespaces split into 3 partitions (separate hash tags) on the standalone
//! Redis of `REDIS_URL`: the conformance suite, less three checks whose rule
//! is per partition by design (see docs/redis.md, Partitions), plus checks
//! of rotation and of debounce within a partition.

use std::{collections::BTreeSet, time::Duration};

use executor_core::{
    Namespace, Retention, SubmitOutcome, TaskId, WorkerId,
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
// holds within a partition, not across), `debounce_moves_due_and_replaces_payload`
// and `debounce_max_wait_caps_postponement` (they debounce two different ids
// under one key, which coalesce only when the ids share a partition), and
// `retention_by_count` (a cap is shared out per partition: checked below).
executor_core::storage_conformance_tests!(
    fresh,
    common::cleanup,
    except(
        claim_orders_by_due_and_respects_limit,
        debounce_moves_due_and_replaces_payload,
        debounce_max_wait_caps_postponement,
        retention_by_count,
    )
);

/// Finishes `n` tasks `prefix-i` as COMPLETED, each in its own store
/// millisecond; answers their ids by partition, oldest first.
async fn completed(
    storage: &RedisStorage,
    ns: &Namespace,
    prefix: &str,
    n: usize,
) -> Result<[Vec<String>; 3], Box<dyn std::error::Error>> {
    let worker = WorkerId::generate();
    let mut by_partition: [Vec<String>; 3] = Default::default();
    for i in 0..n {
        let id = format!("{prefix}-{i}");
        storage.submit(ns, testing::new_task(&id)).await?;
        let claimed = storage.claim(ns, &worker, 1, Duration::from_secs(60)).await?;
        let lease = claimed.first().and_then(executor_core::TaskRecord::lease).ok_or("nothing claimed")?;
        storage.finish(ns, &lease, executor_core::storage::Finish::Completed).await?;
        let start = storage.now(ns).await?;
        while storage.now(ns).await? <= start {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        by_partition[partition_of(&id) as usize].push(id);
    }
    Ok(by_partition)
}

/// A cap by count is shared out: `completed_max(6)` over 3 partitions keeps
/// each partition's newest 2, so at most 6 in all, and never a waiting task.
#[tokio::test]
async fn a_count_cap_keeps_each_partitions_newest_share() -> TestResult {
    let (storage, ns) = fresh().await;
    let by_partition = completed(&storage, &ns, "cap", 24).await?;
    assert!(by_partition.iter().all(|p| p.len() >= 2), "24 ids fill every partition: {by_partition:?}");
    storage.submit(&ns, testing::new_task("waiting")).await?;
    let retention = Retention::default().completed(Duration::from_secs(3_600)).completed_max(6);
    assert_eq!(storage.trim(&ns, &retention, 1_000).await?, 18);
    for ids in &by_partition {
        let (old, newest) = ids.split_at(ids.len() - 2);
        for id in newest {
            assert!(
                storage.get(&ns, &TaskId::new(id.as_str())?).await?.is_some(),
                "{id} is among its partition's newest 2"
            );
        }
        for id in old {
            assert!(storage.get(&ns, &TaskId::new(id.as_str())?).await?.is_none(), "{id} is over the cap");
        }
    }
    assert!(storage.get(&ns, &TaskId::new("waiting")?).await?.is_some(), "waiting tasks are never trimmed");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

/// A trim limited below what is due starts at a different partition each
/// call: three calls of 4 take from all three partitions (before, every
/// call started at partition 0 and the others starved).
#[tokio::test]
async fn trims_rotate_over_partitions() -> TestResult {
    let (storage, ns) = fresh().await;
    let by_partition = completed(&storage, &ns, "rot", 30).await?;
    let all_past = Retention::default().completed(Duration::ZERO);
    let start = storage.now(&ns).await?;
    while storage.now(&ns).await? <= start {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for _ in 0..3 {
        // Fewer than any partition holds, so one call stays in one partition.
        let limit = by_partition.iter().map(Vec::len).min().unwrap_or(1).min(4);
        assert_eq!(storage.trim(&ns, &all_past, limit).await?, limit as u64);
    }
    for (p, ids) in by_partition.iter().enumerate() {
        let mut gone = 0;
        for id in ids {
            if storage.get(&ns, &TaskId::new(id.as_str())?).await?.is_none() {
                gone += 1;
            }
        }
        assert!(gone > 0, "partition {p} starved: none of {ids:?} trimmed");
    }
    common::cleanup(&storage, &ns).await;
    Ok(())
}

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
