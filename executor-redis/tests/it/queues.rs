//! Named queues and priorities in Redis, beyond the conformance
//! checks: the keys the levels leave behind, listing waiting tasks level by
//! level, and records whose queue or priority field was damaged by hand.

use executor_core::storage::QueueControl;
use std::time::Duration;

use executor_core::{
    ListQuery, QueueName, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{NewTask, Storage},
    testing,
};
use fred::interfaces::{HashesInterface, KeysInterface};

use crate::common::corrupt::{Damage, TestResult};

const LEASE: Duration = Duration::from_secs(60);

fn task(id: &str, queue: &str, priority: u8) -> TestResult<NewTask> {
    let mut t = testing::new_task(id);
    t.queue = QueueName::new(queue)?;
    t.priority = priority;
    Ok(t)
}

async fn submit_all(d: &Damage, tasks: Vec<NewTask>) -> TestResult {
    for r in d.storage.submit_many(&d.ns, tasks).await? {
        r?;
    }
    Ok(())
}

/// A default-queue task at priority 0 writes no `g`/`v` field and no level
/// key (the plain path is as before queues); a level is registered while its
/// ZSET has tasks and leaves the registry with its last task.
#[tokio::test]
async fn levels_come_and_go_with_their_tasks() -> TestResult {
    let d = Damage::new("queue-keys").await;
    submit_all(&d, vec![testing::new_task("plain"), task("mail-1", "mail", 3)?, task("mail-2", "mail", 0)?])
        .await?;
    let gv: Vec<Option<String>> = d.redis.hmget(d.task_key("plain"), vec!["g", "v"]).await?;
    assert_eq!(gv, [None, None], "a plain task writes no queue fields");
    assert!(d.indexed("due", "plain").await?);
    assert!(d.indexed("qd:3:mail", "mail-1").await? && d.indexed("qd:0:mail", "mail-2").await?);
    let digits: Option<String> = d.redis.hget(d.key("queues"), "mail").await?;
    assert_eq!(digits.as_deref(), Some("30"), "the registry lists mail's levels, highest first");
    d.assert_counts_exact().await?;

    let plan = ClaimPlan::single(QueueName::new("mail")?, 1);
    let got = d.storage.claim(&d.ns, &WorkerId::generate(), &plan, LEASE).await?;
    assert_eq!(got.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["mail-1"], "priority 3 first");
    let digits: Option<String> = d.redis.hget(d.key("queues"), "mail").await?;
    assert_eq!(digits.as_deref(), Some("0"), "level 3 left with its last task");
    let n: i64 = d.redis.exists(d.key("qd:3:mail")).await?;
    assert_eq!(n, 0);
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

/// `list` of a waiting state walks the due ZSET, then every level, in pages
/// of any size, each task once.
#[tokio::test]
async fn list_walks_every_level() -> TestResult {
    let d = Damage::new("queue-list").await;
    let mut tasks = Vec::new();
    for i in 0..7 {
        tasks.push(testing::new_task(&format!("d{i}")));
        tasks.push(task(&format!("a{i}"), "alpha", (i % 3) as u8)?);
        tasks.push(task(&format!("z{i}"), "zeta", 9)?);
    }
    submit_all(&d, tasks).await?;
    let mut seen = Vec::new();
    let mut cursor = None;
    for _ in 0..50 {
        let mut query = ListQuery::new(TaskState::Created, 4);
        query.cursor = cursor.take();
        let page = d.storage.list(&d.ns, query).await?;
        assert!(page.unreadable.is_empty(), "{:?}", page.unreadable);
        seen.extend(page.tasks.into_iter().map(|t| t.id.to_string()));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    seen.sort();
    let mut want: Vec<String> =
        (0..7).flat_map(|i| [format!("d{i}"), format!("a{i}"), format!("z{i}")]).collect();
    want.sort();
    assert_eq!(seen, want, "every waiting task once");
    d.cleanup().await;
    Ok(())
}

/// A record whose queue or priority field was damaged by hand, in the
/// middle of a level: the claim sets it aside (ERROR, dead letter, the
/// reason) and claims its neighbours; the counts match the records.
#[tokio::test]
async fn claim_sets_aside_a_corrupt_queue_or_priority() -> TestResult {
    for (field, value, why) in [
        ("v", "12", "`v`"),
        ("v", "high", "`v`"),
        ("g", "no space", "`g`"),
        ("g", "", "`g`"),
        // Well-formed but not the level it waits in.
        ("v", "2", "wrong waiting index"),
    ] {
        let d = Damage::new("queue-bad").await;
        let tasks = (0..21).map(|i| task(&format!("t{i:02}"), "work", 5)).collect::<TestResult<Vec<_>>>()?;
        submit_all(&d, tasks).await?;
        let _: () = d.redis.hset(d.task_key("t10"), (field, value)).await?;
        let plan = ClaimPlan::single(QueueName::new("work")?, 100);
        let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), &plan, LEASE).await?;
        let mut ids: Vec<String> = claimed.iter().map(|t| t.id.to_string()).collect();
        ids.sort();
        let expected: Vec<String> = (0..21).filter(|i| *i != 10).map(|i| format!("t{i:02}")).collect();
        assert_eq!(ids, expected, "{field}={value:?}: the 20 good tasks are claimed");
        assert_eq!(d.indexes_of("t10").await?, ["dead"], "{field}={value:?}: dead letter only");
        assert!(!d.indexed("qd:5:work", "t10").await?, "{field}={value:?}: out of its level");
        assert_eq!(d.state("t10").await?.as_deref(), Some("ERROR"));
        let e = d.last_error("t10").await?;
        assert!(e.starts_with("corrupt task record: ") && e.contains(why), "{field}={value:?}: {e}");
        d.assert_counts_exact().await?;
        // Neither `get` nor `queues` fails on it.
        let _ = d.storage.get(&d.ns, &executor_core::TaskId::new("t10")?).await;
        d.storage.queues(&d.ns).await?;
        d.cleanup().await;
    }
    Ok(())
}

/// A task whose queue field was damaged while it waited is still found by
/// cancel and delete, which take it out of every level.
#[tokio::test]
async fn delete_finds_a_task_whose_queue_was_damaged() -> TestResult {
    let d = Damage::new("queue-del").await;
    submit_all(&d, vec![task("lost", "work", 4)?, task("kept", "work", 4)?]).await?;
    let _: () = d.redis.hset(d.task_key("lost"), ("g", "bad name")).await?;
    assert!(d.storage.delete(&d.ns, &executor_core::TaskId::new("lost")?).await?);
    assert!(!d.indexed("qd:4:work", "lost").await?, "out of its level");
    assert!(d.indexed("qd:4:work", "kept").await?);
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}
