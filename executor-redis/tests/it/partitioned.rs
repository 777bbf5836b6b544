//! Namespaces split into 3 partitions (separate hash tags) on the standalone
//! Redis of `REDIS_URL`: the conformance suite, less three checks whose rule
//! is per partition by design (see docs/redis.md, Partitions), plus checks
//! of rotation and of debounce within a partition.

use std::{collections::BTreeSet, time::Duration};

use executor_core::{
    Namespace, SubmitOutcome, TaskId, WorkerId,
    query::Retention,
    queue::ClaimPlan,
    storage::{Debounce, Storage, SubmitMode},
    testing,
};
use reliable_executor_redis::RedisStorage;

use crate::common;

async fn fresh() -> (RedisStorage, Namespace) {
    let url = common::url();
    let storage = common::connect_with(RedisStorage::builder(&url).partitions(3), &url).await;
    (storage, testing::unique_namespace("redis-p3"))
}

// Not run here: `claim_orders_by_due_and_respects_limit` (earliest due first
// holds within a partition, not across) and `retention_by_count` (a cap is
// shared out per partition: checked below). The debounce checks run: a
// debounced submit goes to its key's partition.
executor_core::testing::storage_conformance_tests!(
    fresh,
    common::cleanup,
    except(claim_orders_by_due_and_respects_limit, fresh_id_claimed_in_submit_order, retention_by_count,)
);
// Schedules live in partition 0's hash tag, whatever the partition count.
executor_core::testing::schedule_conformance_tests!(fresh, common::cleanup);
// History too: one index and its minutes in partition 0's hash tag.
executor_core::testing::history_conformance_tests!(fresh, common::cleanup);
// The attempt log lives in each task's own hash.
executor_core::testing::attempt_log_conformance_tests!(fresh, common::cleanup);
executor_core::testing::run_now_conformance_tests!(fresh, common::cleanup);
// The queue checks less `queue_priority_order`: priority, like earliest due,
// orders the claims of one partition (and each batch), not claims one by one
// across partitions.
executor_core::testing::queue_conformance_tests!(fresh, common::cleanup, except(queue_priority_order));
// Limits live in partition 0's slot, which every partition's scripts reach
// on one server: they hold across partitions, atomically.
executor_core::testing::queue_limit_conformance_tests!(fresh, common::cleanup);

/// Repeats of one debounce key with a fresh id each (what
/// `TaskBuilder::debounce` without `.id(..)` sends) coalesce into one task
/// although their ids hash to every partition; keys spread over partitions.
#[tokio::test]
async fn debounce_without_an_id_coalesces_across_partitions() -> TestResult {
    let (storage, ns) = fresh().await;
    let mut first = None;
    for i in 0..30 {
        let mut task = testing::new_task(&format!("repeat-{i}"));
        task.id = TaskId::generate();
        task.mode = SubmitMode::Debounce(Debounce::new("user-42", Duration::from_secs(30)));
        let out = storage.submit(&ns, task).await?;
        match &first {
            None => {
                assert_eq!(out.outcome, SubmitOutcome::Created);
                first = Some(out.id.clone());
            }
            Some(id) => assert_eq!((&out.id, out.outcome), (id, SubmitOutcome::Debounced), "repeat {i}"),
        }
    }
    assert_eq!(storage.counts(&ns).await?.total(), 1, "30 repeats of one key are one task");
    let id = first.ok_or("no first submit")?;
    assert!(storage.get(&ns, &id).await?.is_some(), "the answered id is the stored task");
    for k in 0..12 {
        let mut task = testing::new_task(&format!("other-{k}"));
        task.id = TaskId::generate();
        task.mode = SubmitMode::Debounce(Debounce::new(format!("key-{k}"), Duration::from_secs(30)));
        storage.submit(&ns, task).await?;
    }
    assert_eq!(storage.counts(&ns).await?.total(), 13);
    common::cleanup(&storage, &ns).await;
    Ok(())
}

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
        let claimed =
            storage.claim(ns, &worker, &ClaimPlan::default_queue(1), Duration::from_secs(60)).await?;
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
        let batch =
            storage.claim(&ns, &worker, &ClaimPlan::default_queue(10), Duration::from_secs(60)).await?;
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

/// A chosen id is never changed: debounced under a key whose partition is
/// another, it is refused with a message that says why; one that lands in
/// the key's partition is kept and coalesces repeats.
#[tokio::test]
async fn debounce_keeps_or_refuses_a_chosen_id_never_changes_it() -> TestResult {
    let (storage, ns) = fresh().await;
    let (mut kept, mut refused) = (0, 0);
    for i in 0..12 {
        let debounced = |id: &str| {
            let mut task = testing::new_task(id);
            task.mode = SubmitMode::Debounce(Debounce::new(format!("user-{i}"), Duration::from_secs(30)));
            task
        };
        let task = debounced(&format!("per-user-{i}"));
        match storage.submit(&ns, task.clone()).await {
            Ok(out) => {
                assert_eq!((&out.id, out.outcome), (&task.id, SubmitOutcome::Created));
                // A repeat is another submit: another task, built again.
                let mut repeat = debounced(&format!("per-user-{i}-again"));
                repeat.payload = br#"{"n":2}"#.to_vec();
                match storage.submit(&ns, repeat).await {
                    // The repeat's own id may be refused too; when it is
                    // taken, it coalesces into the first task.
                    Ok(again) => assert_eq!(
                        (again.id.as_str(), again.outcome),
                        (format!("per-user-{i}").as_str(), SubmitOutcome::Debounced)
                    ),
                    Err(executor_core::Error::Invalid { what: "task id", .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                kept += 1;
            }
            Err(executor_core::Error::Invalid { what: "task id", reason }) => {
                assert!(reason.contains("leave the id out"), "{reason}");
                refused += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    assert!(kept > 0 && refused > 0, "12 ids over 3 partitions: kept {kept}, refused {refused}");
    assert_eq!(storage.counts(&ns).await?.total(), kept);
    common::cleanup(&storage, &ns).await;
    Ok(())
}
