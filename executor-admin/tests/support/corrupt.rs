//! [`CorruptStore`]: a [`MemoryStorage`] that also holds records that do
//! not parse, the way a Redis hash edited by hand or a row written by a
//! newer version looks to a store: `list` skips them into
//! `Page::unreadable`, `get`, `cancel` and `requeue` answer
//! `Error::Corrupt`, `delete` removes them, `counts` counts them. It can
//! also make the requeue of chosen readable tasks fail.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use executor_core::{
    CancelOutcome, Error, Finish, Heartbeat, Leadership, Lease, ListQuery, MemoryStorage, Namespace, NewTask,
    Page, Reaped, Result, Retention, StateCounts, Storage, Submitted, TaskId, TaskRecord, TaskState,
    TierStorage, Timestamp, Unreadable, WorkerId,
};

#[derive(Debug, Default)]
struct Bad {
    /// Unreadable records: id -> (state, reason).
    corrupt: BTreeMap<String, (TaskState, String)>,
    /// Readable tasks whose requeue fails: id -> retryable.
    refuse_requeue: BTreeMap<String, bool>,
}

/// See the module doc. Clones share their records.
#[derive(Clone, Debug, Default)]
pub(crate) struct CorruptStore {
    inner: MemoryStorage,
    bad: Arc<Mutex<Bad>>,
}

impl CorruptStore {
    fn bad(&self) -> std::sync::MutexGuard<'_, Bad> {
        self.bad.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds an unreadable record `id` in `state` (in every namespace).
    pub(crate) fn corrupt(&self, id: &str, state: TaskState, reason: &str) {
        self.bad().corrupt.insert(id.to_owned(), (state, reason.to_owned()));
    }

    /// Makes the requeue of `id` fail with a store error.
    pub(crate) fn refuse_requeue(&self, id: &str, retryable: bool) {
        self.bad().refuse_requeue.insert(id.to_owned(), retryable);
    }

    fn corrupt_error(&self, id: &TaskId) -> Option<Error> {
        let reason = self.bad().corrupt.get(id.as_str()).map(|(_, reason)| reason.clone())?;
        Some(Error::Corrupt { id: id.clone(), reason })
    }
}

impl Storage for CorruptStore {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.inner.submit(ns, task).await
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        self.inner.submit_many(ns, tasks).await
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.inner.claim(ns, worker, limit, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.inner.heartbeat(ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        self.inner.finish(ns, lease, finish).await
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        self.inner.finish_many(ns, items).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        match self.corrupt_error(id) {
            Some(e) => Err(e),
            None => self.inner.cancel(ns, id).await,
        }
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        match self.corrupt_error(id) {
            Some(e) => Err(e),
            None => self.inner.get(ns, id).await,
        }
    }

    /// The unreadable records of the state come with its first page.
    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        let (state, first) = (query.state, query.cursor.is_none());
        let mut page = self.inner.list(ns, query).await?;
        if first {
            let bad = self.bad();
            page.unreadable.extend(
                bad.corrupt
                    .iter()
                    .filter(|(_, (s, _))| *s == state)
                    .map(|(id, (_, reason))| Unreadable { id: id.clone(), reason: reason.clone() }),
            );
        }
        Ok(page)
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        let was_corrupt = self.bad().corrupt.remove(id.as_str()).is_some();
        Ok(self.inner.delete(ns, id).await? || was_corrupt)
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        let mut counts = self.inner.counts(ns).await?;
        for (state, _) in self.bad().corrupt.values() {
            *counts.0.entry(*state).or_default() += 1;
        }
        Ok(counts)
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        if let Some(e) = self.corrupt_error(id) {
            return Err(e);
        }
        let refused = self.bad().refuse_requeue.get(id.as_str()).copied();
        match refused {
            Some(retryable) => {
                Err(Error::storage(format!("requeue of {id} refused by the test store"), retryable))
            }
            None => self.inner.requeue(ns, id).await,
        }
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
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.inner.acquire_leadership(ns, worker, ttl).await
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

    async fn housekeeping(&self, ns: &Namespace) -> Result<()> {
        self.inner.housekeeping(ns).await
    }

    async fn wait_for_work(&self, ns: &Namespace, max_wait: Duration) -> Result<()> {
        self.inner.wait_for_work(ns, max_wait).await
    }
}

impl TierStorage for CorruptStore {
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        self.inner.due_before(ns, before, limit).await
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        self.inner.import(ns, record).await
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        self.inner.remove(ns, id, fence).await
    }
}
