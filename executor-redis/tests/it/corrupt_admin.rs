//! Issue 12, items 2, 5 and 15: cancel, requeue, trim, list, get and delete
//! beside a record damaged by hand (every kind of `common::corrupt::ALL`),
//! namespace keys of the wrong type, a broken counts hash, a broken
//! leadership. The good tasks behave exactly as without the bad one, and
//! the counts match the records.

use executor_core::storage::RunNow;
use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use executor_core::{
    Error, ListQuery, TaskId, TaskState, WorkerId,
    query::{CancelOutcome, Retention},
    queue::ClaimPlan,
    storage::{Finish, Storage},
    testing,
};
use fred::interfaces::{HashesInterface, KeysInterface};

use crate::common::corrupt::{ALL, Corruption, Damage, TestResult};

const LEASE: Duration = Duration::from_secs(60);

fn tid(id: &str) -> TaskId {
    TaskId::new(id).unwrap_or_else(|e| panic!("{id}: {e}"))
}

async fn submit(d: &Damage, ids: &[&str]) -> TestResult {
    for id in ids {
        d.storage.submit(&d.ns, testing::new_task(id)).await?;
    }
    Ok(())
}

/// Claims everything due and finishes it with `finish`.
async fn run_all(d: &Damage, finish: Finish) -> TestResult {
    let claimed =
        d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(100), LEASE).await?;
    let items = claimed.iter().filter_map(|t| t.lease()).map(|l| (l, finish.clone())).collect();
    for r in d.storage.finish_many(&d.ns, items).await? {
        r?;
    }
    Ok(())
}

/// Damage that leaves no known state (or no hash): cancel and requeue
/// answer `Corrupt` for it and set it aside.
fn no_state(c: Corruption) -> bool {
    matches!(c, Corruption::WrongType | Corruption::UnknownState | Corruption::MissingState)
}

#[tokio::test]
async fn cancel_beside_a_corrupt_record() -> TestResult {
    for c in ALL {
        let d = Damage::new("cancel-bad").await;
        submit(&d, &["a", "b", "c"]).await?;
        d.apply("b", c).await?;
        let answer = d.storage.cancel(&d.ns, &tid("b")).await;
        if no_state(c) {
            assert!(matches!(answer, Err(Error::Corrupt { .. })), "{c:?}: {answer:?}");
            d.assert_set_aside("b", c).await?;
        } else {
            assert!(matches!(answer, Ok(CancelOutcome::Cancelled)), "{c:?}: {answer:?}");
        }
        for id in ["a", "c"] {
            assert_eq!(d.storage.cancel(&d.ns, &tid(id)).await?, CancelOutcome::Cancelled, "{c:?}");
            assert_eq!(d.indexes_of(id).await?, ["done"]);
        }
        // A claim sets the bad one aside if it was not cancelled.
        d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
        d.assert_counts_exact().await?;
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn requeue_beside_a_corrupt_record() -> TestResult {
    for c in ALL {
        let d = Damage::new("requeue-bad").await;
        submit(&d, &["a", "b", "c"]).await?;
        run_all(&d, Finish::Failed { error: "boom".into() }).await?;
        d.apply("b", c).await?;
        let answer = d.storage.requeue(&d.ns, &tid("b")).await;
        if no_state(c) {
            assert!(matches!(answer, Err(Error::Corrupt { .. })), "{c:?}: {answer:?}");
        } else {
            assert!(answer.is_ok(), "{c:?}: {answer:?}");
        }
        for id in ["a", "c"] {
            d.storage.requeue(&d.ns, &tid(id)).await?;
            assert_eq!(d.state(id).await?.as_deref(), Some("PENDING"), "{c:?}");
        }
        let claimed =
            d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
        let mut ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
        ids.sort_unstable();
        if matches!(c, Corruption::OutOfRange | Corruption::Negative) {
            // The damaged field (due time, attempts) is one requeue writes anew.
            assert_eq!(ids, ["a", "b", "c"], "{c:?}: requeue repaired the record");
        } else {
            assert_eq!(ids, ["a", "c"], "{c:?}: a requeued corrupt record is set aside again, not run");
            d.assert_set_aside("b", c).await?;
        }
        d.assert_counts_exact().await?;
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn run_now_beside_a_corrupt_record() -> TestResult {
    for c in ALL {
        let d = Damage::new("run-now-bad").await;
        for id in ["a", "b", "c"] {
            let mut task = testing::new_task(id);
            task.due = executor_core::storage::Due::After(Duration::from_secs(3_600));
            d.storage.submit(&d.ns, task).await?;
        }
        d.apply("b", c).await?;
        let answer = d.storage.run_now(&d.ns, &tid("b")).await;
        if no_state(c) {
            assert!(matches!(answer, Err(Error::Corrupt { .. })), "{c:?}: {answer:?}");
            d.assert_set_aside("b", c).await?;
        } else {
            assert!(answer.is_ok(), "{c:?}: {answer:?}");
        }
        for id in ["a", "c"] {
            d.storage.run_now(&d.ns, &tid(id)).await?;
        }
        let claimed =
            d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
        let ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
        assert!(ids.contains(&"a") && ids.contains(&"c"), "{c:?}: the good tasks run now: {ids:?}");
        if !ids.contains(&"b") && !no_state(c) {
            // Damage run_now does not repair: the claim sets it aside.
            d.assert_set_aside("b", c).await?;
        }
        d.assert_counts_exact().await?;
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn trim_deletes_a_corrupt_record_with_its_neighbours() -> TestResult {
    for c in ALL {
        let d = Damage::new("trim-bad").await;
        submit(&d, &["a", "b", "c"]).await?;
        run_all(&d, Finish::Completed).await?;
        d.apply("b", c).await?;
        let retention = Retention::default().completed(Duration::ZERO).dead_letter(Some(Duration::ZERO));
        let (storage, ns, retention) = (&d.storage, &d.ns, &retention);
        let removed = &AtomicU64::new(0);
        // Finished in the current millisecond is not yet past a zero retention.
        testing::wait_until(Duration::from_secs(5), || async move {
            removed.fetch_add(storage.trim(ns, retention, 100).await.unwrap_or(0), Ordering::SeqCst);
            removed.load(Ordering::SeqCst) >= 3
        })
        .await;
        assert_eq!(removed.load(Ordering::SeqCst), 3, "{c:?}");
        for id in ["a", "b", "c"] {
            assert_eq!(d.key_type(&d.task_key(id)).await?, "none", "{c:?}: {id} deleted");
        }
        d.assert_counts_exact().await?;
        assert_eq!(d.storage.counts(&d.ns).await?.total(), 0, "{c:?}: no phantom counts");
        d.cleanup().await;
    }
    Ok(())
}

/// Lua's unpack() fails past ~8,000 values: trim used to delete the task
/// hashes, then fail on the ZREM of 10,000 ids, leaving the index entries
/// and the counts behind.
#[tokio::test]
async fn trim_of_ten_thousand_finished_tasks_in_one_call() -> TestResult {
    let d = Damage::new("trim-many").await;
    let make = "for i = 1, 10000 do \
                  local id = 'f' .. i \
                  redis.call('HSET', ARGV[1] .. 't:' .. id, 's', 'COMPLETED', 'n', 'x', 'p', '{}', 'm', '1', \
                    'c', '1', 'd', '1', 'z', '1') \
                  redis.call('ZADD', KEYS[4], 1, id) \
                end \
                redis.call('HSET', KEYS[7], 'COMPLETED', 10000)";
    d.script(make, &[]).await?;
    let retention = Retention::default().completed(Duration::ZERO).dead_letter(None);
    assert_eq!(d.storage.trim(&d.ns, &retention, 10_000).await?, 10_000);
    let left: i64 = d.redis.exists(vec![d.key("done"), d.key("counts"), d.task_key("f9999")]).await?;
    assert_eq!(left, 0, "index, counts and hashes all gone");
    d.cleanup().await;
    Ok(())
}

/// Item 10: a page skips records that do not parse and reports them.
#[tokio::test]
async fn list_reports_a_corrupt_record_and_pages_through_the_rest() -> TestResult {
    for c in ALL {
        let d = Damage::new("list-bad").await;
        submit(&d, &["a", "b", "c", "d", "e"]).await?;
        d.apply("c", c).await?;
        let (mut tasks, mut unreadable) = (Vec::new(), Vec::new());
        let mut query = ListQuery::new(TaskState::Created, 2);
        loop {
            let page = d.storage.list(&d.ns, query.clone()).await?;
            tasks.extend(page.tasks.into_iter().map(|t| t.id.to_string()));
            unreadable.extend(page.unreadable);
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => break,
            }
        }
        tasks.sort();
        assert_eq!(tasks, ["a", "b", "d", "e"], "{c:?}: every readable task, once");
        assert_eq!(unreadable.len(), 1, "{c:?}: {unreadable:?}");
        assert_eq!(unreadable[0].id, "c");
        assert!(!unreadable[0].reason.is_empty());
        // After a claim sets it aside, the ERROR listing shows it.
        d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
        let page = d.storage.list(&d.ns, ListQuery::new(TaskState::Error, 10)).await?;
        let listed =
            page.tasks.iter().map(|t| t.id.to_string()).chain(page.unreadable.iter().map(|u| u.id.clone()));
        assert_eq!(listed.collect::<Vec<_>>(), ["c"], "{c:?}: {page:?}");
        d.cleanup().await;
    }
    Ok(())
}

/// Item 11: a cursor not made by the storage never reaches Redis.
#[tokio::test]
async fn foreign_cursors_are_invalid() -> TestResult {
    let d = Damage::new("list-cursor").await;
    submit(&d, &["a"]).await?;
    for cursor in ["0:nan:y", "0:nan:79", "0:1e400:79", "0:inf:zz", "7:1:79", "0:1:7"] {
        let mut query = ListQuery::new(TaskState::Created, 10);
        query.cursor = Some(cursor.to_owned());
        let e = d.storage.list(&d.ns, query).await;
        assert!(matches!(&e, Err(Error::Invalid { .. })), "{cursor}: {e:?}");
        assert!(!e.err().is_some_and(|e| e.is_retryable()), "{cursor}: not retryable");
    }
    d.cleanup().await;
    Ok(())
}

/// Item 10: delete removes any record, readable or not, with its count.
#[tokio::test]
async fn delete_removes_a_corrupt_record_in_any_state() -> TestResult {
    for c in ALL {
        let d = Damage::new("delete-bad").await;
        submit(&d, &["a", "b", "c", "d"]).await?;
        run_all(&d, Finish::Completed).await?;
        submit(&d, &["w"]).await?;
        for id in ["b", "w"] {
            d.apply(id, c).await?;
        }
        for id in ["b", "w"] {
            assert!(d.storage.delete(&d.ns, &tid(id)).await?, "{c:?}: {id} existed");
            assert_eq!(d.key_type(&d.task_key(id)).await?, "none");
            assert!(d.indexes_of(id).await?.is_empty());
        }
        assert!(!d.storage.delete(&d.ns, &tid("b")).await?, "deleted twice");
        d.assert_counts_exact().await?;
        assert_eq!(d.storage.counts(&d.ns).await?.get(TaskState::Completed), 3, "{c:?}");
        d.cleanup().await;
    }
    Ok(())
}

#[tokio::test]
async fn get_of_a_key_that_is_not_a_hash_is_corrupt() -> TestResult {
    let d = Damage::new("get-bad").await;
    submit(&d, &["a"]).await?;
    d.apply("a", Corruption::WrongType).await?;
    match d.storage.get(&d.ns, &tid("a")).await {
        Err(Error::Corrupt { id, reason }) => {
            assert!(id.as_str() == "a" && reason.contains("not a task hash"))
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    d.cleanup().await;
    Ok(())
}

/// A namespace index of the wrong type refuses every script before it
/// writes, with a message naming the key; nothing is half done.
#[tokio::test]
async fn an_index_of_the_wrong_type_stops_scripts_before_they_write() -> TestResult {
    let d = Damage::new("key-bad").await;
    submit(&d, &["a", "b"]).await?;
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(2), LEASE).await?;
    let leases: Vec<_> = claimed.iter().filter_map(|t| t.lease()).collect();
    assert_eq!(leases.len(), 2);
    let _: () = d.redis.set(d.key("done"), "x", None, None, false).await?;
    let e = d.storage.finish(&d.ns, &leases[0], Finish::Completed).await.err().ok_or("finish succeeded")?;
    assert!(e.to_string().contains(&d.key("done")) && !e.is_retryable(), "{e}");
    assert_eq!(d.state(leases[0].id.as_str()).await?.as_deref(), Some("RUNNING"), "not half finished");
    let _: () = d.redis.set(d.key("due"), "x", None, None, false).await?;
    let e = d.storage.submit(&d.ns, testing::new_task("c")).await.err().ok_or("submit succeeded")?;
    assert!(e.to_string().contains(&d.key("due")) && !e.is_retryable(), "{e}");
    assert_eq!(d.key_type(&d.task_key("c")).await?, "none", "nothing stored");
    let _: i64 = d.redis.del(vec![d.key("done"), d.key("due")]).await?;
    for lease in &leases {
        assert_eq!(d.storage.finish(&d.ns, lease, Finish::Completed).await?, TaskState::Completed);
    }
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

/// A count edited into nonsense does not stop work; it is replaced.
#[tokio::test]
async fn a_count_that_is_not_a_number_is_replaced() -> TestResult {
    let d = Damage::new("count-bad").await;
    submit(&d, &["a"]).await?;
    let _: () = d.redis.hset(d.key("counts"), ("CREATED", "lots")).await?;
    submit(&d, &["b"]).await?;
    run_all(&d, Finish::Completed).await?;
    let counts = d.storage.counts(&d.ns).await?;
    assert_eq!(counts.get(TaskState::Completed), 2, "{counts:?}");
    d.cleanup().await;
    Ok(())
}

/// Leadership survives a leader hash or token sequence edited by hand, and
/// tokens still only grow.
#[tokio::test]
async fn leadership_survives_broken_keys() -> TestResult {
    let d = Damage::new("leader-bad").await;
    let ttl = Duration::from_secs(60);
    let first = d.storage.acquire_leadership(&d.ns, &WorkerId::generate(), ttl).await?.ok_or("no term")?;
    let _: () = d.redis.set(d.key("leader"), "x", None, None, false).await?;
    assert_eq!(d.storage.leader(&d.ns).await?, None, "a broken term is no term");
    let second = d.storage.acquire_leadership(&d.ns, &WorkerId::generate(), ttl).await?.ok_or("no term")?;
    assert!(second.token > first.token);
    d.storage.release_leadership(&d.ns, &second).await?;
    let _: () = d.redis.set(d.key("leader:seq"), "many", None, None, false).await?;
    let third = d.storage.acquire_leadership(&d.ns, &WorkerId::generate(), ttl).await?.ok_or("no term")?;
    assert!(third.token > second.token);
    let _: () = d.redis.hset(d.key("leader"), ("t", "-5")).await?;
    assert_eq!(d.storage.leader(&d.ns).await?, None);
    let fourth = d.storage.acquire_leadership(&d.ns, &WorkerId::generate(), ttl).await?.ok_or("no term")?;
    assert!(fourth.token > third.token);
    d.cleanup().await;
    Ok(())
}
