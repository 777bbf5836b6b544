//! Group commit: concurrent `submit` and `finish` calls of one process share
//! one script call per namespace while the previous call is in flight
//! ([`executor_core::GroupCommit`]). An idle process sends each call at
//! once; under load a batch holds every call that arrived during one round
//! trip, so a no-op task costs a fraction of a script call to submit and to
//! finish. Each item keeps its own answer (a duplicate id, a stale fence),
//! exactly as if it had been sent alone.

use std::sync::{Arc, Weak};

use executor_core::{Error, Finish, Lease, Namespace, NewTask, Result, Submitted, TaskState};

use crate::{RedisStorage, error::shape, storage::Inner};

impl RedisStorage {
    pub(crate) async fn finish_one(
        &self,
        ns: &Namespace,
        lease: &Lease,
        finish: Finish,
    ) -> Result<TaskState> {
        let weak = Arc::downgrade(&self.inner);
        let start = move || {
            move |ns: Namespace, items: Vec<(Lease, Finish)>| {
                let storage = upgrade(&weak);
                async move { storage?.finish_leases(&ns, items).await }
            }
        };
        match self.inner.finishes.call(ns, (lease.clone(), finish), start) {
            Ok(answer) => answer.await,
            // No runtime to batch on (it is shutting down): send it alone.
            Err(item) => {
                self.finish_leases(ns, vec![item]).await?.pop().unwrap_or_else(|| Err(shape("no answer")))
            }
        }
    }

    pub(crate) async fn submit_one(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        let weak = Arc::downgrade(&self.inner);
        let start = move || {
            move |ns: Namespace, items: Vec<NewTask>| {
                let storage = upgrade(&weak);
                async move { storage?.submit_tasks(&ns, items).await }
            }
        };
        match self.inner.submits.call(ns, task, start) {
            Ok(answer) => answer.await,
            Err(task) => {
                self.submit_tasks(ns, vec![task]).await?.pop().unwrap_or_else(|| Err(shape("no answer")))
            }
        }
    }
}

/// The storage behind a batcher, while anyone still holds it.
fn upgrade(weak: &Weak<Inner>) -> Result<RedisStorage> {
    weak.upgrade()
        .map(|inner| RedisStorage { inner })
        .ok_or_else(|| Error::storage("the storage was dropped", false))
}
