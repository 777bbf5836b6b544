//! The resend policy against a store double that loses answers: before
//! storing (so a resend creates the task) or with a store error, as a
//! script says, on tokio's paused clock.

use std::{collections::VecDeque, sync::Mutex, time::Duration};

use super::*;
use crate::{
    Client, ListQuery, MemoryStorage, Page, QueueName, SubmitOutcome, TaskBuilder, TaskOptions, TaskRecord,
    TaskState, Timestamp, WorkerId,
    client::Submit,
    query::{CancelOutcome, Retention, StateCounts},
    queue::ClaimPlan,
    storage::{Finish, Heartbeat, Leadership, Lease, Reaped},
    testing,
};

/// What the double does with the next submit.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// Answers that the outcome is unknown, storing nothing.
    Lose,
    /// Fails as an unreachable store does (nothing sent).
    Down,
    /// Stores it.
    Store,
}

/// A memory store whose submits follow a script; the script's end stores.
#[derive(Default)]
struct Lossy {
    inner: MemoryStorage,
    script: Mutex<VecDeque<Next>>,
    /// (id, nonce) of every task sent, in order.
    sent: Mutex<Vec<(TaskId, u64)>>,
}

impl Lossy {
    fn new(script: &[Next]) -> Self {
        Self { script: Mutex::new(script.iter().copied().collect()), ..Self::default() }
    }

    fn sent(&self) -> Vec<(TaskId, u64)> {
        self.sent.lock().map(|s| s.clone()).unwrap_or_default()
    }

    async fn one(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        if let Ok(mut sent) = self.sent.lock() {
            sent.push((task.id.clone(), task.nonce()));
        }
        let next = self.script.lock().ok().and_then(|mut s| s.pop_front()).unwrap_or(Next::Store);
        match next {
            Next::Lose => Err(Error::outcome_unknown(task.id, "connection reset after the request")),
            Next::Down => Err(Error::storage("not connected", true)),
            Next::Store => self.inner.submit(ns, task).await,
        }
    }
}

impl Storage for Lossy {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.one(ns, task).await
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        let mut out = Vec::new();
        for task in tasks {
            out.push(self.one(ns, task).await);
        }
        Ok(out)
    }

    async fn claim(
        &self,
        ns: &Namespace,
        w: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.inner.claim(ns, w, plan, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.inner.heartbeat(ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        self.inner.finish(ns, lease, finish).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        self.inner.cancel(ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        self.inner.get(ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        self.inner.list(ns, query).await
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        self.inner.delete(ns, id).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        self.inner.counts(ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.inner.requeue(ns, id).await
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        self.inner.reap(ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        self.inner.trim(ns, retention, limit).await
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        w: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.inner.acquire_leadership(ns, w, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        self.inner.release_leadership(ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        self.inner.leader(ns).await
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        Storage::now(&self.inner, ns).await
    }

    async fn max_payload(&self) -> Result<usize> {
        self.inner.max_payload().await
    }

    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        self.inner.wait_for_work(ns, queues, max_wait).await
    }
}

fn client(script: &[Next]) -> Client<Lossy> {
    Client::without_name_check(Lossy::new(script), testing::unique_namespace("resend"))
}

#[tokio::test(start_paused = true)]
async fn a_lost_submit_is_sent_again_as_the_same_submit() -> Result<()> {
    let client = client(&[Next::Lose, Next::Lose]);
    let started = tokio::time::Instant::now();
    let submitted = TaskBuilder::new("noop", 1, TaskOptions::new()).submit(&client).await?;
    assert_eq!(submitted.outcome, SubmitOutcome::Created);
    // Paused 100 ms, then 200 ms.
    assert_eq!(started.elapsed(), Duration::from_millis(300));
    let sent = client.storage().sent();
    assert_eq!(sent.len(), 3);
    // One id, generated once, and one nonce each time.
    assert!(sent.iter().all(|s| *s == sent[0] && s.0 == submitted.id), "{sent:?}");
    assert!(submitted.id.is_generated());
    assert_eq!(client.counts().await?.total(), 1);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn every_try_lost_is_an_unknown_outcome_under_the_id() -> Result<()> {
    let client =
        client(&[Next::Lose, Next::Down, Next::Lose, Next::Store]).submit_retry(3, Duration::from_millis(10));
    let e = TaskBuilder::new("noop", 1, TaskOptions::new()).id("order-7").submit(&client).await.err();
    let e = e.ok_or_else(|| Error::Runtime("the lost submit answered".into()))?;
    assert_eq!(e.outcome_unknown_id().map(TaskId::as_str), Some("order-7"), "{e}");
    assert!(e.is_retryable());
    assert_eq!(client.storage().sent().len(), 3);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_store_error_after_a_lost_answer_keeps_it_unknown() -> Result<()> {
    let client = client(&[Next::Lose, Next::Down]).submit_retry(2, Duration::from_millis(10));
    let e = TaskBuilder::new("noop", 1, TaskOptions::new()).submit(&client).await.err();
    assert!(e.as_ref().is_some_and(|e| e.outcome_unknown_id().is_some()), "{e:?}");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_submit_that_reached_nothing_is_not_sent_again() -> Result<()> {
    let client = client(&[Next::Down]);
    let e = TaskBuilder::new("noop", 1, TaskOptions::new()).submit(&client).await.err();
    assert!(matches!(e, Some(Error::Storage { retryable: true, .. })), "{e:?}");
    assert_eq!(client.storage().sent().len(), 1);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn one_try_sends_once() -> Result<()> {
    let client = client(&[Next::Lose]).submit_retry(0, Duration::from_millis(10));
    let e = TaskBuilder::new("noop", 1, TaskOptions::new()).submit(&client).await.err();
    assert!(e.is_some_and(|e| e.outcome_unknown_id().is_some()));
    assert_eq!(client.storage().sent().len(), 1);
    let answers = client.submit_many([testing::new_task("a")]).await;
    assert!(answers[0].is_ok());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_batch_sends_again_only_its_lost_tasks() -> Result<()> {
    let client = client(&[Next::Store, Next::Lose, Next::Store, Next::Lose]);
    let tasks = vec![testing::new_task("a"), testing::new_task("b"), testing::new_task("c")];
    let nonces: Vec<u64> = tasks.iter().map(NewTask::nonce).collect();
    let answers = client.submit_many_new(tasks).await;
    assert!(answers.iter().all(|a| matches!(a, Ok(s) if s.outcome == SubmitOutcome::Created)), "{answers:?}");
    let sent = client.storage().sent();
    let ids: Vec<&str> = sent.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "b", "b"]);
    assert!(sent.iter().filter(|s| s.0.as_str() == "b").all(|s| s.1 == nonces[1]));
    assert_eq!(client.counts().await?.total(), 3);
    Ok(())
}

#[test]
fn pauses_double_up_to_the_cap() {
    let resend = Resend::new(10, Duration::from_millis(100));
    let pauses: Vec<u128> = (1..6).map(|n| resend.pause(n).as_millis()).collect();
    assert_eq!(pauses, [100, 200, 400, 800, 1600]);
    assert_eq!(resend.pause(30), MAX_PAUSE);
    assert_eq!(Resend::new(0, Duration::ZERO).tries, 1);
}

#[test]
fn a_whole_batch_lost_is_lost_for_each_task() -> Result<()> {
    let ids = [TaskId::new("a")?, TaskId::new("b")?];
    let got = answers(Err(Error::outcome_unknown(TaskId::new("a")?, "reset")), &ids);
    let lost: Vec<Option<&TaskId>> =
        got.iter().map(|a| a.as_ref().err().and_then(Error::outcome_unknown_id)).collect();
    assert_eq!(lost, [Some(&ids[0]), Some(&ids[1])]);
    let got = answers(Err(Error::storage("down", true)), &ids);
    assert!(got.iter().all(|a| matches!(a, Err(Error::Storage { retryable: true, .. }))));
    Ok(())
}
