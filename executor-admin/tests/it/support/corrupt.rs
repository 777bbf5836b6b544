//! [`CorruptStore`]: a [`MemoryStorage`] that also holds records that do
//! not parse, the way a Redis hash edited by hand or a row written by a
//! newer version looks to a store: `list` skips them into
//! `Page::unreadable`, `get`, `cancel` and `requeue` answer
//! `Error::Corrupt`, `delete` removes them, `counts` counts them. It can
//! also make the requeue of chosen readable tasks fail. Built on
//! `executor_core::testing::Intercepted`, so only the bent calls are here.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use executor_core::{
    Error, ListQuery, MemoryStorage, Namespace, Page, Result, TaskId, TaskRecord, TaskState,
    query::{CancelOutcome, StateCounts, Unreadable},
    storage::Storage,
    testing::{Intercept, Intercepted},
};

/// See the module doc. Clones share their records; reach the switches
/// through `hooks()`.
pub(crate) type CorruptStore = Intercepted<MemoryStorage, Corruption>;

#[derive(Debug, Default)]
struct Bad {
    /// Unreadable records: id -> (state, reason).
    corrupt: BTreeMap<String, (TaskState, String)>,
    /// Readable tasks whose requeue fails: id -> retryable.
    refuse_requeue: BTreeMap<String, bool>,
}

/// The unreadable records and refused requeues of a [`CorruptStore`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Corruption(Arc<Mutex<Bad>>);

impl Corruption {
    fn bad(&self) -> std::sync::MutexGuard<'_, Bad> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
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

impl Intercept<MemoryStorage> for Corruption {
    async fn cancel(&self, inner: &MemoryStorage, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        match self.corrupt_error(id) {
            Some(e) => Err(e),
            None => inner.cancel(ns, id).await,
        }
    }

    async fn get(&self, inner: &MemoryStorage, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        match self.corrupt_error(id) {
            Some(e) => Err(e),
            None => inner.get(ns, id).await,
        }
    }

    /// The unreadable records of the state come with its first page.
    async fn list(&self, inner: &MemoryStorage, ns: &Namespace, query: ListQuery) -> Result<Page> {
        let (state, first) = (query.state, query.cursor.is_none());
        let mut page = inner.list(ns, query).await?;
        if first {
            let bad = self.bad();
            page.unreadable.extend(
                bad.corrupt
                    .iter()
                    .filter(|(_, (s, _))| *s == state)
                    .map(|(id, (_, reason))| Unreadable::new(id.clone(), reason.clone())),
            );
        }
        Ok(page)
    }

    async fn delete(&self, inner: &MemoryStorage, ns: &Namespace, id: &TaskId) -> Result<bool> {
        let was_corrupt = self.bad().corrupt.remove(id.as_str()).is_some();
        Ok(inner.delete(ns, id).await? || was_corrupt)
    }

    async fn counts(&self, inner: &MemoryStorage, ns: &Namespace) -> Result<StateCounts> {
        let corrupt: Vec<_> = self.bad().corrupt.values().map(|(state, _)| (*state, 1)).collect();
        Ok(inner.counts(ns).await?.iter().chain(corrupt).collect())
    }

    async fn requeue(&self, inner: &MemoryStorage, ns: &Namespace, id: &TaskId) -> Result<()> {
        if let Some(e) = self.corrupt_error(id) {
            return Err(e);
        }
        let refused = self.bad().refuse_requeue.get(id.as_str()).copied();
        match refused {
            Some(retryable) => {
                Err(Error::storage(format!("requeue of {id} refused by the test store"), retryable))
            }
            None => inner.requeue(ns, id).await,
        }
    }
}
