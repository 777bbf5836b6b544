//! Redis storage for [`executor_core`]: [`RedisStorage`] keeps tasks in Redis
//! (standalone or Cluster) and makes every state change one Lua script, so
//! many executor processes share a namespace without locks.
//!
//! ```no_run
//! # async fn demo() -> executor_core::Result<()> {
//! use executor_core::{Namespace, WorkerId, queue::ClaimPlan, storage::Storage};
//! use reliable_executor_redis::RedisStorage;
//! use std::time::Duration;
//!
//! let storage = RedisStorage::connect("redis://127.0.0.1:6379").await?;
//! let ns = Namespace::new("my-app")?;
//! let plan = ClaimPlan::default_queue(16);
//! let claimed = storage.claim(&ns, &WorkerId::generate(), &plan, Duration::from_secs(30)).await?;
//! println!("claimed {}", claimed.len());
//! # Ok(())
//! # }
//! ```
//!
//! Data model, durability settings, resend behaviour and benchmarks:
//! `docs/redis.md` in the repository.

mod admin;
mod args;
mod builder;
mod claim;
mod error;
mod finish;
mod history;
mod housekeeping;
mod keys;
mod leader;
mod query;
mod queues;
mod record;
mod schedule;
mod scripts;
mod storage;
mod submit;
mod tier;
mod wake;

use std::time::Duration;

use executor_core::{
    ListQuery, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord, TaskState, Timestamp,
    WorkerId,
    query::{CancelOutcome, Retention, StateCounts},
    queue::ClaimPlan,
    storage::{Finish, Heartbeat, Leadership, Lease, NewTask, Reaped, Storage},
};

pub use builder::RedisStorageBuilder;
pub use storage::RedisStorage;

// Each method is the inherent one of the same name in the module of its
// section (`submit.rs`, `claim.rs`, ...); the `RedisStorage::` path picks the
// inherent function, not this trait method. The optional abilities are
// implemented in their own modules (`queues.rs`, `schedule.rs`,
// `history.rs`, `admin.rs` for `RunNow`, `leader.rs` for `Presence`,
// `tier.rs` for `TierStorage`).
impl Storage for RedisStorage {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        RedisStorage::submit(self, ns, task).await
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        RedisStorage::submit_many(self, ns, tasks).await
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        RedisStorage::claim(self, ns, worker, plan, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        RedisStorage::heartbeat(self, ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        RedisStorage::finish(self, ns, lease, finish).await
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        RedisStorage::finish_many(self, ns, items).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        RedisStorage::cancel(self, ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        RedisStorage::get(self, ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        RedisStorage::list(self, ns, query).await
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        RedisStorage::delete(self, ns, id).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        RedisStorage::counts(self, ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        RedisStorage::requeue(self, ns, id).await
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        RedisStorage::reap(self, ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        RedisStorage::trim(self, ns, retention, limit).await
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        RedisStorage::acquire_leadership(self, ns, worker, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        RedisStorage::release_leadership(self, ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        RedisStorage::leader(self, ns).await
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        RedisStorage::now(self, ns).await
    }

    async fn max_payload(&self) -> Result<usize> {
        Ok(Self::MAX_PAYLOAD)
    }

    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        RedisStorage::wait_for_work(self, ns, queues, max_wait).await
    }

    async fn housekeeping(&self, ns: &Namespace) -> Result<()> {
        RedisStorage::housekeeping(self, ns).await
    }
}
