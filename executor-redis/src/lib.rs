//! Redis storage for [`executor_core`]: [`RedisStorage`] keeps tasks in Redis
//! (standalone or Cluster) and makes every state change one Lua script, so
//! many executor processes share a namespace without locks.
//!
//! ```no_run
//! # async fn demo() -> executor_core::Result<()> {
//! use executor_core::{Namespace, Storage, WorkerId};
//! use executor_redis::RedisStorage;
//! use std::time::Duration;
//!
//! let storage = RedisStorage::connect("redis://127.0.0.1:6379").await?;
//! let ns = Namespace::new("my-app")?;
//! let claimed = storage.claim(&ns, &WorkerId::generate(), 16, Duration::from_secs(30)).await?;
//! println!("claimed {}", claimed.len());
//! # Ok(())
//! # }
//! ```
//!
//! Data model, durability settings, resend behaviour and benchmarks:
//! `docs/redis.md` in the repository.

mod admin;
mod args;
mod batch;
mod builder;
mod error;
mod keys;
mod leader;
mod lease;
mod list;
mod record;
mod scripts;
mod storage;
mod submit;
mod tier;
mod wake;

use std::time::Duration;

use executor_core::{
    CancelOutcome, Finish, Heartbeat, Leadership, Lease, ListQuery, Namespace, NewTask, Page, Reaped, Result,
    Retention, StateCounts, Storage, Submitted, TaskId, TaskRecord, TaskState, Timestamp, WorkerId,
};

pub use builder::RedisStorageBuilder;
pub use storage::RedisStorage;

impl Storage for RedisStorage {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.submit_one(ns, task).await
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        self.submit_tasks(ns, tasks).await
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.claim_tasks(ns, worker, limit, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.heartbeat_leases(ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        self.finish_one(ns, lease, finish).await
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        self.finish_leases(ns, items).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        self.cancel_task(ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        self.get_task(ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        self.list_tasks(ns, query).await
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        self.delete_task(ns, id).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        self.count_states(ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.requeue_task(ns, id).await
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        self.reap_leases(ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        self.trim_finished(ns, retention, limit).await
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.acquire(ns, worker, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        self.release(ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        self.current_leader(ns).await
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        self.tier_now(ns).await
    }

    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        self.tier_due_before(ns, before, limit).await
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        self.tier_import(ns, record).await
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        self.tier_remove(ns, id, fence).await
    }

    async fn wait_for_work(&self, ns: &Namespace, max_wait: Duration) -> Result<()> {
        self.wait(ns, max_wait).await
    }
}
