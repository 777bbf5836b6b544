//! A namespace written by the previous release, whose records were one hash
//! per task (`fixtures/previous_model.json`: every key it wrote for thirteen
//! tasks in every state, the namespace replaced by `NS`). The storage reads
//! those records as they are, works on them, and writes each back as the
//! string record of today's model at its next change; nothing is lost on
//! the way.

use std::{collections::BTreeSet, time::Duration};

use executor_core::{
    Error, QueueName, TaskId, TaskState, WorkerId,
    query::CancelOutcome,
    queue::ClaimPlan,
    storage::{Finish, Storage},
    testing,
};
use fred::interfaces::{HashesInterface, KeysInterface, SortedSetsInterface};

use crate::common::corrupt::{Damage, TestResult};

const FIXTURE: &str = include_str!("fixtures/previous_model.json");

fn tid(id: &str) -> TaskId {
    TaskId::new(id).unwrap_or_else(|e| panic!("{id}: {e}"))
}

/// Writes the fixture's keys into the namespace of `d`.
async fn restore(d: &Damage) -> TestResult {
    let keys: serde_json::Value = serde_json::from_str(&FIXTURE.replace("NS", d.ns.as_str()))?;
    for entry in keys.as_array().ok_or("the fixture is a list")? {
        let key = entry["key"].as_str().ok_or("a key")?;
        let value = &entry["value"];
        match entry["type"].as_str() {
            Some("hash") => {
                let pairs: Vec<(String, String)> = value
                    .as_object()
                    .ok_or("a hash")?
                    .iter()
                    .map(|(f, v)| (f.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect();
                let _: () = d.redis.hset(key, pairs).await?;
            }
            Some("zset") => {
                for pair in value.as_array().ok_or("a zset")? {
                    let member = pair[0].as_str().ok_or("a member")?;
                    let score: f64 = pair[1].as_str().ok_or("a score")?.parse()?;
                    let _: () = d.redis.zadd(key, None, None, false, false, (score, member)).await?;
                }
            }
            Some("string") => {
                let _: () = d.redis.set(key, value.as_str().ok_or("a string")?, None, None, false).await?;
            }
            other => return Err(format!("{key}: unexpected type {other:?}").into()),
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_namespace_of_the_previous_model_is_read_and_drained() -> TestResult {
    let d = Damage::new("prev-model").await;
    restore(&d).await?;
    assert_eq!(d.key_type(&d.task_key("w1")).await?, "hash", "the fixture holds the previous model");

    // Read as it was written.
    let counts = d.storage.counts(&d.ns).await?;
    let expected = [
        (TaskState::Created, 8),
        (TaskState::Pending, 1),
        (TaskState::Running, 1),
        (TaskState::Completed, 1),
        (TaskState::Failed, 1),
        (TaskState::Cancelled, 1),
    ];
    assert_eq!(counts.iter().collect::<Vec<_>>(), expected.iter().map(|(s, n)| (*s, *n)).collect::<Vec<_>>());
    let get = |id: &'static str| {
        let d = &d;
        async move {
            let task = d.storage.get(&d.ns, &tid(id)).await.map_err(|e| format!("{id}: {e}"))?;
            task.ok_or_else(|| format!("{id} is gone"))
        }
    };
    let retry = get("retry").await?;
    assert_eq!(
        (retry.state, retry.attempts, retry.last_error.as_deref()),
        (TaskState::Pending, 1, Some("boom"))
    );
    assert_eq!(retry.attempt_log.len(), 1, "the attempt log is read");
    let opts = get("opts").await?;
    assert_eq!(opts.max_attempts, 5);
    assert!(opts.deadline.is_some() && opts.timeout.is_some(), "{opts:?}");
    let mail = get("mail5").await?;
    assert_eq!((mail.queue.as_str(), mail.priority), ("mail", 5));
    let dead = get("dead").await?;
    assert_eq!((dead.state, dead.last_error.as_deref()), (TaskState::Failed, Some("fatal")));
    assert_eq!(get("deb").await?.debounce_key.as_deref(), Some("k1"));
    assert_eq!(get("gone").await?.state, TaskState::Cancelled);
    assert_eq!(get("run").await?.state, TaskState::Running);

    // A taken id is still taken.
    assert!(matches!(d.storage.submit(&d.ns, testing::new_task("w1")).await, Err(Error::DuplicateId(_))));

    // The running task's lease expired long ago: the reaper takes it back.
    let reaped = d.storage.reap(&d.ns, 10).await?;
    assert_eq!(
        [reaped.retried, reaped.failed, reaped.timed_out].concat(),
        [tid("run")],
        "the expired lease is reaped"
    );

    // Every due task of the default queue is claimed and completed; each
    // record is a string of today's model from then on.
    let claimed = d
        .storage
        .claim(&d.ns, &WorkerId::generate(), &ClaimPlan::default_queue(100), Duration::from_secs(60))
        .await?;
    let ids: BTreeSet<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
    let must: BTreeSet<&str> = ["w1", "w2", "w3", "idem", "opts", "retry"].into();
    let may: BTreeSet<&str> = ["deb", "delayed", "run"].into();
    assert!(ids.is_superset(&must) && ids.difference(&must).all(|id| may.contains(id)), "{ids:?}");
    for task in &claimed {
        let lease = task.lease().ok_or("a lease")?;
        assert_eq!(d.storage.finish(&d.ns, &lease, Finish::Completed).await?, TaskState::Completed);
        assert_eq!(d.key_type(&d.task_key(task.id.as_str())).await?, "string", "{} rewritten", task.id);
        assert_eq!(d.state(task.id.as_str()).await?.as_deref(), Some("COMPLETED"));
    }
    let retry = get("retry").await?;
    assert_eq!((retry.attempts, retry.attempt_log.len()), (2, 1), "the attempt log came along");

    // The other queue's level, a requeue, a cancel and a delete.
    let plan = ClaimPlan::single(QueueName::new("mail")?, 10);
    let mail = d.storage.claim(&d.ns, &WorkerId::generate(), &plan, Duration::from_secs(60)).await?;
    assert_eq!(mail.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["mail5"]);
    d.storage.requeue(&d.ns, &tid("dead")).await?;
    assert_eq!(get("dead").await?.state, TaskState::Pending);
    if !ids.contains("delayed") {
        assert_eq!(d.storage.cancel(&d.ns, &tid("delayed")).await?, CancelOutcome::Cancelled);
    }
    assert!(d.storage.delete(&d.ns, &tid("gone")).await?);
    let total: u64 = d.storage.counts(&d.ns).await?.iter().map(|(_, n)| n).sum();
    assert_eq!(total, 12, "thirteen tasks, one deleted: {:?}", d.storage.counts(&d.ns).await?);
    let n: i64 = d.redis.exists(d.task_key("gone")).await?;
    assert_eq!(n, 0);
    d.cleanup().await;
    Ok(())
}
