//! Issue 12, items 2, 4 and 15: submit and the tier scripts (due_before,
//! import, remove) beside a record damaged by hand (every kind of
//! `common::corrupt::ALL`): the good items behave exactly as without the
//! bad one, and the counts match the records.

use std::time::Duration;

use executor_core::{
    Error, SubmitOutcome, TaskId, TaskState, Timestamp, WorkerId,
    queue::ClaimPlan,
    storage::{Debounce, NewTask, Storage, SubmitMode, TierStorage},
    testing,
};
use fred::interfaces::HashesInterface;

use crate::common::corrupt::{ALL, Corruption, Damage, TestResult};

const LEASE: Duration = Duration::from_secs(60);

fn tid(id: &str) -> TaskId {
    TaskId::new(id).unwrap_or_else(|e| panic!("{id}: {e}"))
}

fn debounced(id: &str, key: &str) -> NewTask {
    let mut task = testing::new_task(id);
    task.mode = SubmitMode::Debounce(Debounce::new(key, Duration::ZERO));
    task
}

/// A plain submit onto an id whose key holds a string answers `Corrupt`
/// alone; the rest of its batch is created.
#[tokio::test]
async fn submit_many_beside_a_key_that_is_not_a_hash() -> TestResult {
    let d = Damage::new("submit-bad").await;
    d.storage.submit(&d.ns, testing::new_task("b")).await?;
    d.apply("b", Corruption::WrongType).await?;
    let mut idem = testing::new_task("b");
    idem.mode = SubmitMode::Idempotent;
    let batch = vec![testing::new_task("a"), testing::new_task("b"), idem, testing::new_task("c")];
    let out = d.storage.submit_many(&d.ns, batch).await?;
    assert!(matches!(out[0], Ok(ref s) if s.outcome == SubmitOutcome::Created), "{out:?}");
    assert!(matches!(out[1], Err(Error::Corrupt { .. })), "{out:?}");
    assert!(matches!(out[2], Err(Error::Corrupt { .. })), "{out:?}");
    assert!(matches!(out[3], Ok(ref s) if s.outcome == SubmitOutcome::Created), "{out:?}");
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
    let mut ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["a", "c"]);
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

/// A debounce key bound to a corrupt record: the record is set aside (or
/// left to the next claim when it has no known state) and the submit
/// creates a new task, as if the key were free.
#[tokio::test]
async fn debounce_onto_a_corrupt_record_creates_a_new_task() -> TestResult {
    for c in ALL {
        let d = Damage::new("debounce-bad").await;
        d.storage.submit(&d.ns, debounced("d1", "k")).await?;
        d.apply("d1", c).await?;
        let batch = vec![testing::new_task("a"), debounced("d2", "k"), testing::new_task("b")];
        let out = d.storage.submit_many(&d.ns, batch).await?;
        let summary: Vec<_> = out.iter().map(|r| r.as_ref().map(|s| (s.id.to_string(), s.outcome))).collect();
        for (i, id) in ["a", "d2", "b"].iter().enumerate() {
            assert!(
                matches!(&summary[i], Ok((got, SubmitOutcome::Created)) if got == id),
                "{c:?}: item {i}: {summary:?}"
            );
        }
        let claimed =
            d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
        let mut ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["a", "b", "d2"], "{c:?}");
        d.assert_set_aside("d1", c).await?;
        d.assert_counts_exact().await?;
        d.cleanup().await;
    }
    Ok(())
}

/// Item 4: options out of range are refused per item at the store's entry
/// point, before Lua could wrap them to -9223372036854775808.
#[tokio::test]
async fn submit_many_refuses_out_of_range_items_alone() -> TestResult {
    let d = Damage::new("submit-range").await;
    let mut far = testing::new_task("far");
    far.due = executor_core::storage::Due::After(Duration::MAX);
    let mut late = testing::new_task("late");
    late.due = executor_core::storage::Due::At(Timestamp::from_millis(i64::MAX as u64));
    let mut window = debounced("window", "w");
    window.mode = SubmitMode::Debounce(Debounce::new("w", Duration::MAX));
    let batch = vec![testing::new_task("a"), far, late, window, testing::new_task("b")];
    let out = d.storage.submit_many(&d.ns, batch).await?;
    assert!(out[0].is_ok() && out[4].is_ok(), "{out:?}");
    for r in &out[1..4] {
        assert!(matches!(r, Err(Error::Invalid { .. })), "{out:?}");
    }
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
    assert_eq!(claimed.len(), 2, "only the two good tasks exist, and nothing ran early");
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn due_before_skips_a_corrupt_record() -> TestResult {
    for c in ALL {
        let d = Damage::new("due-bad").await;
        for id in ["a", "b", "c"] {
            d.storage.submit(&d.ns, testing::new_task(id)).await?;
        }
        d.apply("b", c).await?;
        let now = d.storage.now(&d.ns).await?;
        let due = d.storage.due_before(&d.ns, now.saturating_add(Duration::from_secs(3600)), 10).await?;
        let ids: Vec<&str> = due.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.len(), 2, "{c:?}: {ids:?}");
        assert!(ids.contains(&"a") && ids.contains(&"c"), "{c:?}: {ids:?}");
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn import_and_remove_beside_a_corrupt_record() -> TestResult {
    let d = Damage::new("import-bad").await;
    d.storage.submit(&d.ns, debounced("held", "k")).await?;
    let template = d.storage.get(&d.ns, &tid("held")).await?.ok_or("no record")?;
    d.apply("held", Corruption::WrongType).await?;
    // The debounce key is bound to a key that holds a string: the imported
    // waiting task takes the binding over.
    let moved = {
        let mut t = template.clone();
        t.id = tid("moved");
        t
    };
    assert!(d.storage.import(&d.ns, moved).await?);
    let bound: Option<String> = d.redis.hget(d.key("debounce"), "k").await?;
    assert_eq!(bound.as_deref(), Some("moved"));
    // Importing onto the string key is refused and writes nothing.
    let onto = {
        let mut t = template.clone();
        t.id = tid("held");
        t
    };
    assert!(matches!(d.storage.import(&d.ns, onto).await, Err(Error::Corrupt { .. })));
    assert_eq!(d.key_type(&d.task_key("held")).await?, "string");
    // Remove refuses the string key, removes the good task.
    assert!(!d.storage.remove(&d.ns, &tid("held"), 0).await?);
    assert!(d.storage.remove(&d.ns, &tid("moved"), 0).await?);
    // A record out of range is refused before the script.
    let bad = {
        let mut t = template;
        t.id = tid("late");
        t.due_at = Timestamp::from_millis(u64::MAX);
        t
    };
    assert!(matches!(d.storage.import(&d.ns, bad).await, Err(Error::Invalid { .. })));
    d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
    d.assert_counts_exact().await?;
    assert_eq!(d.storage.counts(&d.ns).await?.get(TaskState::Created), 0);
    d.cleanup().await;
    Ok(())
}
