//! A submit whose answer is lost: a proxy forwards the submit's INSERT, lets
//! the server commit it, and cuts the connection before the answer comes
//! back. The storage says the outcome is unknown, under the task's id; the
//! same submit sent again answers `Created` and the task exists once; the
//! `Client` resends by itself and answers `Ok`. A submit that fails before
//! anything is sent is an ordinary error.

use std::time::Duration;

use executor_core::{
    Client, Error, Namespace, SubmitOutcome, TaskBuilder, TaskOptions,
    storage::{NewTask, Storage, SubmitMode},
    testing::{
        self,
        proxy::{Proxy, host_port, via},
    },
};
use sqlx::pool::PoolOptions;

use super::{TestDb, TestResult, cleanup, fresh, url};
use crate::{Dialect, SqlStorage};

/// A proxy in front of the test server, a storage through it (plain text,
/// so the proxy sees the task ids), one straight to the server, a
/// namespace.
#[allow(clippy::type_complexity)]
async fn proxied<D: TestDb>()
-> Result<(Proxy, SqlStorage<D::Dialect>, SqlStorage<D::Dialect>, Namespace), Box<dyn std::error::Error>> {
    let url = url::<D>();
    let proxy = Proxy::start(&host_port(&url)).await?;
    let mut url = via(&url, proxy.port);
    url.push(if url.contains('?') { '&' } else { '?' });
    url.push_str(D::PLAIN_TEXT);
    let pool = PoolOptions::<<D::Dialect as Dialect>::Db>::new()
        .max_connections(4 + D::Dialect::RESERVED_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(1))
        .connect(&url)
        .await?;
    let storage = SqlStorage::<D::Dialect>::options().max_connections(4).open(pool).await?;
    let (direct, ns) = fresh::<D>().await;
    Ok((proxy, storage, direct, ns))
}

/// A lone submit whose answer is lost is unknown under its id, and its
/// resend answers `Created`; the task exists once.
pub async fn a_lone_submit_whose_answer_is_lost_is_unknown_and_its_resend_is_created<D: TestDb>() -> TestResult
{
    let (proxy, storage, direct, ns) = proxied::<D>().await?;
    let task = testing::new_task(&format!("lost-{}", ns.as_str()));
    proxy.cut_after(task.id.as_str().as_bytes());
    let e = storage.submit(&ns, task.resend()).await.err().ok_or("the cut submit answered")?;
    assert_eq!(proxy.cuts(), 1, "the proxy did not cut the submit: {e}");
    eprintln!("a submit whose answer was lost: {e}");
    assert!(matches!(&e, Error::OutcomeUnknown { id, .. } if *id == task.id), "{e:?}");
    assert!(e.is_retryable());
    // The server committed it: the task is there, once.
    assert!(direct.get(&ns, &task.id).await?.is_some(), "the cut submit was not stored");
    assert_eq!(storage.submit(&ns, task.resend()).await?.outcome, SubmitOutcome::Created);
    // Another submit of the id (a task built again) is a duplicate; an
    // idempotent one finds it.
    let another = || testing::new_task(task.id.as_str());
    assert!(matches!(storage.submit(&ns, another()).await, Err(Error::DuplicateId(_))));
    let mut idempotent = another();
    idempotent.mode = SubmitMode::Idempotent;
    assert_eq!(storage.submit(&ns, idempotent).await?.outcome, SubmitOutcome::Existing);
    assert_eq!(direct.counts(&ns).await?.total(), 1);
    cleanup(&direct, &ns).await;
    Ok(())
}

/// A batch whose answer is lost is unknown for each of its tasks, and each
/// answers as the same submit when sent again.
pub async fn a_batch_whose_answer_is_lost_is_unknown_for_each_task<D: TestDb>() -> TestResult {
    let (proxy, storage, direct, ns) = proxied::<D>().await?;
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
    // Sent again (with a task that is new), each answers as the same submit.
    let mut again: Vec<NewTask> = tasks.iter().map(NewTask::resend).collect();
    again.push(testing::new_task(&format!("batch-new-{}", ns.as_str())));
    for answer in storage.submit_many(&ns, again).await? {
        assert_eq!(answer?.outcome, SubmitOutcome::Created);
    }
    assert_eq!(direct.counts(&ns).await?.total(), 4);
    cleanup(&direct, &ns).await;
    Ok(())
}

/// The `Client` resends a submit whose answer was lost and answers once.
pub async fn the_client_resends_a_lost_submit_and_answers_once<D: TestDb>() -> TestResult {
    let (proxy, storage, direct, ns) = proxied::<D>().await?;
    let client = Client::without_name_check(storage, ns.clone());
    // A generated id: the payload marks the request.
    let marker = format!("lost-{}", ns.as_str());
    proxy.cut_after(marker.as_bytes());
    let submitted = TaskBuilder::new("noop", &marker, TaskOptions::new()).submit(&client).await?;
    assert_eq!(proxy.cuts(), 1, "the proxy did not cut the submit");
    assert!(submitted.is_created());
    assert_eq!(direct.counts(&ns).await?.total(), 1);
    cleanup(&direct, &ns).await;
    Ok(())
}

/// A submit that reaches no server is an ordinary (retryable) error, not
/// an unknown outcome.
pub async fn a_submit_that_reaches_no_server_is_not_unknown<D: TestDb>() -> TestResult {
    let (proxy, storage, direct, ns) = proxied::<D>().await?;
    proxy.refuse();
    // Longer than a kept connection goes unpinged: the storage finds its
    // connections gone before it sends anything.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let task = testing::new_task(&format!("refused-{}", ns.as_str()));
    let e = storage.submit(&ns, task.resend()).await.err().ok_or("a submit reached the server")?;
    assert!(e.outcome_unknown_id().is_none(), "{e}");
    assert!(e.is_retryable(), "{e}");
    let client = Client::without_name_check(storage, ns.clone());
    let e = TaskBuilder::new("noop", 1, TaskOptions::new()).submit(&client).await.err().ok_or("sent")?;
    assert!(e.outcome_unknown_id().is_none(), "{e}");
    eprintln!("a submit that reached no server: {e}");
    assert_eq!(direct.counts(&ns).await?.total(), 0);
    cleanup(&direct, &ns).await;
    Ok(())
}
