//! Issue 12, item 2 (and 15): a record damaged by hand in the middle of a
//! batch of claim, heartbeat, finish and reap. Every kind of damage
//! (`common::corrupt::ALL`) is tried; the good items must behave exactly as
//! without the bad one, the bad one must be set aside (ERROR, dead-letter
//! index, the reason as last error), and the counts must match the records.

use std::time::Duration;

use executor_core::{
    Error, Executor, Handler, TaskContext, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Storage},
    testing,
};
use fred::interfaces::SortedSetsInterface;

use crate::common::corrupt::{ALL, Corruption, Damage, TestResult};

const LEASE: Duration = Duration::from_secs(60);

fn id(i: usize) -> String {
    format!("t{i:02}")
}

async fn submit_n(d: &Damage, n: usize) -> TestResult {
    let tasks = (0..n).map(|i| testing::new_task(&id(i))).collect();
    for r in d.storage.submit_many(&d.ns, tasks).await? {
        r?;
    }
    Ok(())
}

/// Whether this damage leaves a record that is no longer RUNNING with its
/// fence (scripts that only read state and fence see the others as sound).
fn breaks_state(c: Corruption) -> bool {
    matches!(c, Corruption::WrongType | Corruption::UnknownState | Corruption::MissingState)
}

/// The repro of the issue: before, claim.lua had removed all 21 ids from the
/// due set when HGET hit WRONGTYPE, and the 20 good tasks were left RUNNING
/// in no index: never run, never reaped.
#[tokio::test]
async fn claim_sets_each_corrupt_record_aside_and_claims_the_rest() -> TestResult {
    for c in ALL {
        let d = Damage::new("claim-bad").await;
        submit_n(&d, 21).await?;
        d.apply(&id(10), c).await?;
        let claimed =
            d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(100), LEASE).await?;
        let mut ids: Vec<String> = claimed.iter().map(|t| t.id.to_string()).collect();
        ids.sort();
        let expected: Vec<String> = (0..21).filter(|i| *i != 10).map(id).collect();
        assert_eq!(ids, expected, "{c:?}: the 20 good tasks are claimed, the bad one is not");
        for t in &expected {
            assert_eq!(d.indexes_of(t).await?, ["lease"], "{c:?}: {t} is leased");
            assert_eq!(d.state(t).await?.as_deref(), Some("RUNNING"));
        }
        d.assert_set_aside(&id(10), c).await?;
        d.assert_counts_exact().await?;
        let again =
            d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(100), LEASE).await?;
        assert!(again.is_empty(), "{c:?}: nothing is left due: {again:?}");
        d.cleanup().await;
    }
    Ok(())
}

/// The same through a running executor: the 20 good tasks complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_good_tasks_beside_a_string_key() -> TestResult {
    let d = Damage::new("claim-exec").await;
    submit_n(&d, 21).await?;
    d.apply(&id(10), Corruption::WrongType).await?;
    let handler = Handler::new("conformance", |_: serde_json::Value, _ctx: TaskContext| async {});
    let executor = Executor::builder(d.storage.clone())
        .namespace(d.ns.as_str())
        .concurrency(8)
        .handler(handler)
        .build()
        .await?;
    let running = executor.start();
    let (storage, ns) = (&d.storage, &d.ns);
    testing::wait_until(Duration::from_secs(10), || async move {
        storage.counts(ns).await.map(|c| c.get(TaskState::Completed) == 20).unwrap_or(false)
    })
    .await;
    running.shutdown().await?;
    d.assert_set_aside(&id(10), Corruption::WrongType).await?;
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn heartbeat_renews_the_good_leases_beside_a_corrupt_record() -> TestResult {
    for c in ALL {
        let d = Damage::new("beat-bad").await;
        submit_n(&d, 5).await?;
        let claimed = d
            .storage
            .claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(5), Duration::from_secs(1))
            .await?;
        assert_eq!(claimed.len(), 5);
        d.apply(&id(2), c).await?;
        let leases: Vec<_> = claimed.iter().filter_map(|t| t.lease()).collect();
        let beat = d.storage.heartbeat(&d.ns, &leases, LEASE).await?;
        let lost: Vec<String> = beat.lost.iter().map(ToString::to_string).collect();
        let expected_lost = if breaks_state(c) { vec![id(2)] } else { Vec::new() };
        assert_eq!(lost, expected_lost, "{c:?}: only a record that lost its state or type is lost");
        for t in &claimed {
            let until: Option<f64> = d.redis.zscore(d.key("lease"), t.id.as_str()).await?;
            let before = t.lease_until.map(|u| u.as_millis() as f64).unwrap_or_default();
            if t.id.as_str() != id(2) {
                assert!(until.unwrap_or_default() > before + 30_000.0, "{c:?}: {} renewed", t.id);
            }
        }
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn finish_many_writes_the_good_items_beside_a_corrupt_record() -> TestResult {
    for c in ALL {
        let d = Damage::new("finish-bad").await;
        submit_n(&d, 5).await?;
        let claimed = d
            .storage
            .claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(5), Duration::from_millis(1))
            .await?;
        d.apply(&id(2), c).await?;
        let items = claimed.iter().filter_map(|t| t.lease()).map(|l| (l, Finish::Completed)).collect();
        let answers = d.storage.finish_many(&d.ns, items).await?;
        for (t, answer) in claimed.iter().zip(answers) {
            match answer {
                Err(Error::StaleFence { .. }) if t.id.as_str() == id(2) && breaks_state(c) => {}
                Ok(TaskState::Completed) if t.id.as_str() != id(2) || !breaks_state(c) => {}
                other => panic!("{c:?}: {} answered {other:?}", t.id),
            }
        }
        for i in [0, 1, 3, 4] {
            assert_eq!(d.indexes_of(&id(i)).await?, ["done"], "{c:?}: {} is finished", id(i));
        }
        if breaks_state(c) {
            // Still in the lease index: the reaper sets it aside once the lease ran out.
            let (storage, ns) = (&d.storage, &d.ns);
            testing::wait_until(Duration::from_secs(5), || async move {
                storage.reap(ns, 10).await.is_ok()
                    && storage.counts(ns).await.is_ok_and(|n| n.get(TaskState::Error) == 1)
            })
            .await;
            d.assert_set_aside(&id(2), c).await?;
        }
        d.assert_counts_exact().await?;
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn reap_recovers_the_good_leases_and_sets_a_corrupt_record_aside() -> TestResult {
    for c in ALL {
        let d = Damage::new("reap-bad").await;
        submit_n(&d, 5).await?;
        let claimed = d
            .storage
            .claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(5), Duration::from_millis(1))
            .await?;
        assert_eq!(claimed.len(), 5);
        d.apply(&id(2), c).await?;
        let (storage, ns) = (&d.storage, &d.ns);
        let reaped = testing::wait_for(Duration::from_secs(5), "expired leases", || async move {
            storage.reap(ns, 100).await.ok().filter(|r| !r.is_empty())
        })
        .await;
        let mut retried: Vec<String> = reaped.retried.iter().map(ToString::to_string).collect();
        retried.sort();
        assert_eq!(retried, [id(0), id(1), id(3), id(4)], "{c:?}: the good tasks go back to PENDING");
        assert!(reaped.failed.is_empty() && reaped.timed_out.is_empty(), "{c:?}: {reaped:?}");
        for i in [0, 1, 3, 4] {
            assert_eq!(d.state(&id(i)).await?.as_deref(), Some("PENDING"));
            assert_eq!(d.indexes_of(&id(i)).await?, ["due"]);
        }
        d.assert_set_aside(&id(2), c).await?;
        d.assert_counts_exact().await?;
        d.cleanup().await;
    }
    Ok(())
}

/// A claim whose index entries point at no task (hashes deleted by hand)
/// takes their counts back and claims the rest.
#[tokio::test]
async fn claim_drops_entries_whose_hash_was_deleted() -> TestResult {
    let d = Damage::new("claim-ghost").await;
    submit_n(&d, 5).await?;
    let _: i64 = fred::interfaces::KeysInterface::del(&d.redis, d.task_key(&id(3))).await?;
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
    assert_eq!(claimed.len(), 4);
    assert!(d.indexes_of(&id(3)).await?.is_empty());
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

/// What Lua cannot check (a retry policy that is JSON but not a policy) is
/// found by Rust after the claim: that task goes to ERROR with the reason,
/// the rest of the batch is handed out.
#[tokio::test]
async fn claim_dead_letters_a_record_only_rust_can_tell_is_corrupt() -> TestResult {
    let d = Damage::new("claim-rust").await;
    submit_n(&d, 5).await?;
    let _: () =
        fred::interfaces::HashesInterface::hset(&d.redis, d.task_key(&id(2)), ("r", r#"{"no":"policy"}"#))
            .await?;
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
    assert_eq!(claimed.len(), 4);
    assert!(claimed.iter().all(|t| t.id.as_str() != id(2)));
    assert_eq!(d.state(&id(2)).await?.as_deref(), Some("ERROR"));
    let e = d.last_error(&id(2)).await?;
    assert!(e.starts_with("corrupt task record: ") && e.contains("`r`"), "{e}");
    assert_eq!(d.indexes_of(&id(2)).await?, ["dead"]);
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}
