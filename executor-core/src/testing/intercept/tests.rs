//! Every `Storage` method of an [`Intercepted`] reaches the wrapped store's
//! own implementation, never the trait's default.

use crate::storage::HistoryStore;
use std::{sync::Mutex, time::Duration};

use super::{Intercept, Intercepted};
use crate::{
    Error, ListQuery, MemoryStorage, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord,
    TaskState, Timestamp, WorkerId,
    query::{CancelOutcome, Retention, StateCounts},
    queue::ClaimPlan,
    storage::{
        Finish, Heartbeat, HistoryBucket, HistoryCount, Leadership, Lease, NewTask, Reaped, Storage,
        TierStorage,
    },
    testing,
};

/// Overrides every method of [`Storage`], defaulted ones included, and
/// records which were called. A method added to the trait must be added
/// here and to `every_method_reaches_the_inner_store`.
#[derive(Debug, Default)]
struct Probe(Mutex<Vec<&'static str>>);

impl Probe {
    fn hit<T>(&self, method: &'static str) -> Result<T> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(method);
        Err(Error::invalid("probe", method))
    }
}

impl Storage for Probe {
    async fn submit(&self, _: &Namespace, _: NewTask) -> Result<Submitted> {
        self.hit("submit")
    }
    async fn max_payload(&self) -> Result<usize> {
        self.hit("max_payload")
    }
    async fn submit_many(&self, _: &Namespace, _: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        self.hit("submit_many")
    }
    async fn claim(
        &self,
        _: &Namespace,
        _: &WorkerId,
        _: &ClaimPlan,
        _: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.hit("claim")
    }
    async fn heartbeat(&self, _: &Namespace, _: &[Lease], _: Duration) -> Result<Heartbeat> {
        self.hit("heartbeat")
    }
    async fn finish(&self, _: &Namespace, _: &Lease, _: Finish) -> Result<TaskState> {
        self.hit("finish")
    }
    async fn finish_many(&self, _: &Namespace, _: Vec<(Lease, Finish)>) -> Result<Vec<Result<TaskState>>> {
        self.hit("finish_many")
    }
    async fn cancel(&self, _: &Namespace, _: &TaskId) -> Result<CancelOutcome> {
        self.hit("cancel")
    }
    async fn get(&self, _: &Namespace, _: &TaskId) -> Result<Option<TaskRecord>> {
        self.hit("get")
    }
    async fn list(&self, _: &Namespace, _: ListQuery) -> Result<Page> {
        self.hit("list")
    }
    async fn delete(&self, _: &Namespace, _: &TaskId) -> Result<bool> {
        self.hit("delete")
    }
    async fn counts(&self, _: &Namespace) -> Result<StateCounts> {
        self.hit("counts")
    }
    async fn requeue(&self, _: &Namespace, _: &TaskId) -> Result<()> {
        self.hit("requeue")
    }
    async fn reap(&self, _: &Namespace, _: usize) -> Result<Reaped> {
        self.hit("reap")
    }
    async fn trim(&self, _: &Namespace, _: &Retention, _: usize) -> Result<u64> {
        self.hit("trim")
    }
    async fn acquire_leadership(
        &self,
        _: &Namespace,
        _: &WorkerId,
        _: Duration,
    ) -> Result<Option<Leadership>> {
        self.hit("acquire_leadership")
    }
    async fn release_leadership(&self, _: &Namespace, _: &Leadership) -> Result<()> {
        self.hit("release_leadership")
    }
    async fn leader(&self, _: &Namespace) -> Result<Option<Leadership>> {
        self.hit("leader")
    }
    async fn now(&self, _: &Namespace) -> Result<Timestamp> {
        self.hit("now")
    }
    async fn housekeeping(&self, _: &Namespace) -> Result<()> {
        self.hit("housekeeping")
    }
    async fn wait_for_work(&self, _: &Namespace, _: &[QueueName], _: Duration) -> Result<()> {
        self.hit("wait_for_work")
    }
}

impl HistoryStore for Probe {
    async fn add_history(&self, _: &Namespace, _: &[HistoryCount]) -> Result<()> {
        self.hit("add_history")
    }
    async fn history(&self, _: &Namespace, _: Timestamp) -> Result<Vec<HistoryBucket>> {
        self.hit("history")
    }
    async fn trim_history(&self, _: &Namespace, _: Timestamp) -> Result<u64> {
        self.hit("trim_history")
    }
}

impl TierStorage for Probe {
    async fn due_before(&self, _: &Namespace, _: Timestamp, _: usize) -> Result<Vec<TaskRecord>> {
        self.hit("due_before")
    }

    async fn import(&self, _: &Namespace, _: TaskRecord) -> Result<bool> {
        self.hit("import")
    }

    async fn remove(&self, _: &Namespace, _: &TaskId, _: u64) -> Result<bool> {
        self.hit("remove")
    }
}

/// A running task's record, from a memory store (for `import` and the lease).
async fn running_record() -> Result<TaskRecord> {
    let mem = MemoryStorage::new();
    let ns = testing::unique_namespace("intercept");
    mem.submit(&ns, testing::new_task("probe")).await?;
    let mut claimed =
        mem.claim(&ns, &WorkerId::new("w")?, &ClaimPlan::default_queue(1), Duration::from_secs(30)).await?;
    claimed.pop().ok_or_else(|| Error::invalid("test", "nothing claimed"))
}

#[tokio::test]
async fn every_method_reaches_the_inner_store() -> Result<()> {
    let rec = running_record().await?;
    let lease = rec.lease().ok_or_else(|| Error::invalid("test", "claimed task has no lease"))?;
    let (ns, id, w, d) = (Namespace::new("probe")?, rec.id.clone(), WorkerId::new("w")?, Duration::ZERO);
    let term = Leadership::new(w.clone(), 1, Timestamp::now_system());
    let s = Intercepted::new(Probe::default(), ());
    // Each call fails with the probe's error; what matters is which method ran.
    let _ = s.submit(&ns, testing::new_task("a")).await;
    let _ = s.submit_many(&ns, vec![testing::new_task("b")]).await;
    let _ = s.claim(&ns, &w, &ClaimPlan::default_queue(1), d).await;
    let _ = s.heartbeat(&ns, std::slice::from_ref(&lease), d).await;
    let _ = s.finish(&ns, &lease, Finish::Completed).await;
    let _ = s.finish_many(&ns, vec![(lease.clone(), Finish::Completed)]).await;
    let _ = s.cancel(&ns, &id).await;
    let _ = s.get(&ns, &id).await;
    let _ = s.list(&ns, ListQuery::new(TaskState::Pending, 10)).await;
    let _ = s.delete(&ns, &id).await;
    let _ = s.counts(&ns).await;
    let _ = s.requeue(&ns, &id).await;
    let _ = s.reap(&ns, 1).await;
    let _ = s.trim(&ns, &Retention::default(), 1).await;
    let _ = s.acquire_leadership(&ns, &w, d).await;
    let _ = s.release_leadership(&ns, &term).await;
    let _ = s.leader(&ns).await;
    let _ = s.now(&ns).await;
    let _ = s.due_before(&ns, Timestamp::now_system(), 1).await;
    let _ = s.import(&ns, rec.clone()).await;
    let _ = s.remove(&ns, &id, 1).await;
    let _ = s.housekeeping(&ns).await;
    let _ = s.wait_for_work(&ns, &[QueueName::default()], d).await;
    let _ = s.add_history(&ns, &[HistoryCount::new("a", 1, 0)]).await;
    let _ = s.history(&ns, Timestamp::default()).await;
    let _ = s.trim_history(&ns, Timestamp::default()).await;
    let called = s.inner().0.lock().map(|v| v.clone()).unwrap_or_default();
    let every = [
        "submit",
        "submit_many",
        "claim",
        "heartbeat",
        "finish",
        "finish_many",
        "cancel",
        "get",
        "list",
        "delete",
        "counts",
        "requeue",
        "reap",
        "trim",
        "acquire_leadership",
        "release_leadership",
        "leader",
        "now",
        "due_before",
        "import",
        "remove",
        "housekeeping",
        "wait_for_work",
        "add_history",
        "history",
        "trim_history",
    ];
    assert_eq!(called, every, "each call must reach the inner store's own method, once, in order");
    Ok(())
}

/// Reports every lease lost and counts finishes, batched or not.
#[derive(Debug, Default)]
struct LoseAll(Mutex<usize>);

impl<S: Storage> Intercept<S> for LoseAll {
    async fn heartbeat(&self, _: &S, _: &Namespace, leases: &[Lease], _: Duration) -> Result<Heartbeat> {
        Ok(Heartbeat { lost: leases.iter().map(|l| l.id.clone()).collect(), cancel_requested: vec![] })
    }
    async fn finish(&self, inner: &S, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        inner.finish(ns, lease, finish).await
    }
}

#[tokio::test]
async fn hooks_see_their_calls_and_the_rest_pass_through() -> Result<()> {
    let s = Intercepted::new(MemoryStorage::new(), LoseAll::default());
    let ns = testing::unique_namespace("intercept");
    s.submit(&ns, testing::new_task("t")).await?;
    let claimed =
        s.claim(&ns, &WorkerId::new("w")?, &ClaimPlan::default_queue(5), Duration::from_secs(30)).await?;
    let lease =
        claimed.first().and_then(TaskRecord::lease).ok_or_else(|| Error::invalid("test", "no lease"))?;
    let hb = s.heartbeat(&ns, std::slice::from_ref(&lease), Duration::from_secs(30)).await?;
    assert_eq!(hb.lost, vec![lease.id.clone()], "the hook answered the heartbeat");
    assert_eq!(s.finish(&ns, &lease, Finish::Completed).await?, TaskState::Completed);
    assert_eq!(*s.hooks().0.lock().unwrap_or_else(std::sync::PoisonError::into_inner), 1);
    let rec = s.get(&ns, &lease.id).await?.ok_or_else(|| Error::invalid("test", "task vanished"))?;
    assert_eq!(rec.state, TaskState::Completed, "the finish reached the memory store");
    s.inner().remove_namespace(&ns);
    Ok(())
}
