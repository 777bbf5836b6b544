//! [`NoSchedules`]: a [`MemoryStorage`] that keeps no cron schedules, no
//! history and has no queue controls, the way a store chosen at run time
//! looks when the chosen one truly lacks them (`AnyStorage` over such a
//! variant): every schedule, history and queue method answers
//! `Error::Unsupported`. Everything else is forwarded.

use std::time::Duration;

use executor_core::{
    Error, ListQuery, MemoryStorage, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord,
    TaskState, Timestamp, WorkerId,
    query::{CancelOutcome, Retention, StateCounts, WorkerInfo},
    queue::{ClaimPlan, QueueInfo, QueueLimits},
    schedule::Schedule,
    storage::{
        Advance, Finish, Heartbeat, HistoryBucket, HistoryCount, HistoryStore, Leadership, Lease, NewTask,
        Presence, QueueControl, Reaped, RunNow, ScheduleEntry, ScheduleStore, Storage,
    },
};

/// See the module doc.
#[derive(Clone, Debug, Default)]
pub(crate) struct NoSchedules(MemoryStorage);

impl Storage for NoSchedules {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        self.0.submit(ns, task).await
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        self.0.claim(ns, worker, plan, lease).await
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        self.0.heartbeat(ns, leases, lease).await
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        self.0.finish(ns, lease, finish).await
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        self.0.cancel(ns, id).await
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        self.0.get(ns, id).await
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        self.0.list(ns, query).await
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        self.0.delete(ns, id).await
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        self.0.counts(ns).await
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.0.requeue(ns, id).await
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        self.0.reap(ns, limit).await
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        self.0.trim(ns, retention, limit).await
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        self.0.acquire_leadership(ns, worker, ttl).await
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        self.0.release_leadership(ns, term).await
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        self.0.leader(ns).await
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        Storage::now(&self.0, ns).await
    }

    async fn max_payload(&self) -> Result<usize> {
        self.0.max_payload().await
    }

    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        self.0.wait_for_work(ns, queues, max_wait).await
    }
}

impl Presence for NoSchedules {
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        self.0.announce(ns, worker, names, ttl).await
    }

    async fn workers(&self, ns: &Namespace) -> Result<Vec<WorkerInfo>> {
        self.0.workers(ns).await
    }
}

impl RunNow for NoSchedules {
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        self.0.run_now(ns, id).await
    }
}

impl QueueControl for NoSchedules {
    async fn pause_queue(&self, _: &Namespace, _: &QueueName, _: bool) -> Result<()> {
        Err(Error::unsupported("pause_queue", "this store has no queue controls"))
    }

    async fn set_queue_limits(&self, _: &Namespace, _: &QueueName, _: &QueueLimits) -> Result<()> {
        Err(Error::unsupported("set_queue_limits", "this store has no queue limits"))
    }

    async fn queues(&self, _: &Namespace) -> Result<Vec<QueueInfo>> {
        Err(Error::unsupported("queues", "this store has no queue controls"))
    }
}

impl ScheduleStore for NoSchedules {
    async fn put_schedule(&self, _: &Namespace, _: &Schedule) -> Result<()> {
        Err(Error::unsupported("put_schedule", "this store keeps no cron schedules"))
    }

    async fn schedules(&self, _: &Namespace) -> Result<Vec<ScheduleEntry>> {
        Err(Error::unsupported("schedules", "this store keeps no cron schedules"))
    }

    async fn remove_schedule(&self, _: &Namespace, _: &str) -> Result<bool> {
        Err(Error::unsupported("remove_schedule", "this store keeps no cron schedules"))
    }

    async fn pause_schedule(&self, _: &Namespace, _: &str, _: bool) -> Result<bool> {
        Err(Error::unsupported("pause_schedule", "this store keeps no cron schedules"))
    }

    async fn advance_schedule(&self, _: &Namespace, _: &str, _: &Advance) -> Result<bool> {
        Err(Error::unsupported("advance_schedule", "this store keeps no cron schedules"))
    }
}

impl HistoryStore for NoSchedules {
    async fn add_history(&self, _: &Namespace, _: &[HistoryCount]) -> Result<()> {
        Ok(())
    }

    async fn history(&self, _: &Namespace, _: Timestamp) -> Result<Vec<HistoryBucket>> {
        Err(Error::unsupported("history", "this store keeps no throughput history"))
    }

    async fn trim_history(&self, _: &Namespace, _: Timestamp) -> Result<u64> {
        Ok(0)
    }
}
