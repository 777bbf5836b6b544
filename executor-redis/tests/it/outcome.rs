//! A submit whose answer is lost: a proxy forwards the submit's command,
//! lets Redis run it, and cuts the connection before the answer comes
//! back. The storage says the outcome is unknown, under the task's id; the
//! same submit sent again answers `Created` and the task exists once; the
//! `Client` resends by itself and answers `Ok`. A submit that fails before
//! anything is sent is an ordinary error.

use std::time::Duration;

use executor_core::{
    Client, Error, Namespace, SubmitOutcome, Submitted, TaskBuilder, TaskOptions,
    storage::{NewTask, Storage},
    testing,
};
use reliable_executor_redis::RedisStorage;

use executor_core::testing::proxy::{Proxy, host_port, via};

use crate::common;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A proxy in front of `REDIS_URL`, a storage through it (one connection,
/// so every command takes the proxied path) and one straight to Redis.
async fn proxied() -> Result<(Proxy, RedisStorage, RedisStorage, Namespace), Box<dyn std::error::Error>> {
    let proxy = Proxy::start(&host_port(&common::url())).await?;
    let url = via(&common::url(), proxy.port);
    let storage = common::connect_with(RedisStorage::builder(&url).pool_size(1), &url).await;
    let (direct, ns) = common::fresh().await;
    Ok((proxy, storage, direct, ns))
}

/// Sends the same submit until the storage has reconnected (after a cut,
/// fred reconnects in the background and calls fail fast until it has).
async fn resend(storage: &RedisStorage, ns: &Namespace, task: &NewTask) -> executor_core::Result<Submitted> {
    for _ in 0..100 {
        match storage.submit(ns, task.resend()).await {
            Err(e) if e.is_retryable() && e.outcome_unknown_id().is_none() => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
    storage.submit(ns, task.resend()).await
}

#[tokio::test]
async fn a_lone_submit_whose_answer_is_lost_is_unknown_and_its_resend_is_created() -> TestResult {
    let (proxy, storage, direct, ns) = proxied().await?;
    let task = testing::new_task(&format!("lost-{}", ns.as_str()));
    proxy.cut_after(task.id.as_str().as_bytes());
    let e = storage.submit(&ns, task.resend()).await.err().ok_or("the cut submit answered")?;
    assert_eq!(proxy.cuts(), 1, "the proxy did not cut the submit: {e}");
    eprintln!("a submit whose answer was lost: {e}");
    assert_eq!(e.outcome_unknown_id(), Some(&task.id), "{e}");
    assert!(e.is_retryable());
    assert!(matches!(e, Error::OutcomeUnknown { .. }), "{e:?}");
    // Redis ran it: the task is there, once.
    assert!(direct.get(&ns, &task.id).await?.is_some(), "the cut submit was not stored");
    let again = resend(&storage, &ns, &task).await?;
    assert_eq!(again.outcome, SubmitOutcome::Created);
    // Another submit of the id (a task built again) is a duplicate; an
    // idempotent one finds it.
    let another = || testing::new_task(task.id.as_str());
    assert!(matches!(storage.submit(&ns, another()).await, Err(Error::DuplicateId(_))));
    let mut idempotent = another();
    idempotent.mode = executor_core::storage::SubmitMode::Idempotent;
    assert_eq!(storage.submit(&ns, idempotent).await?.outcome, SubmitOutcome::Existing);
    assert_eq!(direct.counts(&ns).await?.total(), 1);
    common::cleanup(&direct, &ns).await;
    Ok(())
}

#[tokio::test]
async fn a_batch_whose_answer_is_lost_is_unknown_for_each_task() -> TestResult {
    let (proxy, storage, direct, ns) = proxied().await?;
    let tasks: Vec<NewTask> =
        (0..3).map(|i| testing::new_task(&format!("batch-{i}-{}", ns.as_str()))).collect();
    proxy.cut_after(tasks[0].id.as_str().as_bytes());
    let answers = storage.submit_many(&ns, tasks.iter().map(NewTask::resend).collect()).await?;
    assert_eq!(proxy.cuts(), 1);
    for (task, answer) in tasks.iter().zip(&answers) {
        let e = answer.as_ref().err().ok_or("a task of the cut batch answered")?;
        assert_eq!(e.outcome_unknown_id(), Some(&task.id), "{e}");
    }
    assert_eq!(direct.counts(&ns).await?.total(), 3, "the cut batch was not stored");
    let mut again = Vec::new();
    for _ in 0..100 {
        again =
            storage.submit_many(&ns, tasks.iter().map(NewTask::resend).collect()).await.unwrap_or_default();
        if !again.is_empty() && again.iter().all(|a| !matches!(a, Err(e) if e.outcome_unknown_id().is_none()))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for answer in again {
        assert_eq!(answer?.outcome, SubmitOutcome::Created);
    }
    assert_eq!(direct.counts(&ns).await?.total(), 3);
    common::cleanup(&direct, &ns).await;
    Ok(())
}

#[tokio::test]
async fn the_client_resends_a_lost_submit_and_answers_once() -> TestResult {
    let (proxy, storage, direct, ns) = proxied().await?;
    let client = Client::without_name_check(storage, ns.clone());
    // A generated id, as the builder makes one: the payload marks the request.
    let marker = format!("lost-{}", ns.as_str());
    proxy.cut_after(marker.as_bytes());
    let submitted = TaskBuilder::new("noop", &marker, TaskOptions::new()).submit(&client).await?;
    assert_eq!(proxy.cuts(), 1, "the proxy did not cut the submit");
    assert!(submitted.is_created());
    assert!(submitted.id.is_generated());
    assert_eq!(direct.counts(&ns).await?.total(), 1);
    // A batch through the client: every task once.
    let batch: Vec<NewTask> =
        (0..3).map(|i| testing::new_task(&format!("client-batch-{i}-{}", ns.as_str()))).collect();
    proxy.cut_after(batch[1].id.as_str().as_bytes());
    for answer in client.submit_many(batch).await {
        assert_eq!(answer?.outcome, SubmitOutcome::Created);
    }
    assert_eq!(proxy.cuts(), 2);
    assert_eq!(direct.counts(&ns).await?.total(), 4);
    common::cleanup(&direct, &ns).await;
    Ok(())
}

#[tokio::test]
async fn a_submit_that_reaches_no_server_is_not_unknown() -> TestResult {
    let (proxy, storage, direct, ns) = proxied().await?;
    proxy.refuse();
    // fred sees its connection closed and reconnects in the background.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let task = testing::new_task(&format!("refused-{}", ns.as_str()));
    let e = storage.submit(&ns, task.resend()).await.err().ok_or("a submit reached Redis")?;
    assert!(e.outcome_unknown_id().is_none(), "{e}");
    assert!(matches!(e, Error::Storage { retryable: true, .. }), "{e:?}");
    let client = Client::without_name_check(storage, ns.clone());
    let e = TaskBuilder::new("noop", 1, TaskOptions::new()).submit(&client).await.err().ok_or("sent")?;
    assert!(e.outcome_unknown_id().is_none(), "{e}");
    eprintln!("a submit that reached no server: {e}");
    assert_eq!(direct.counts(&ns).await?.total(), 0);
    common::cleanup(&direct, &ns).await;
    Ok(())
}
