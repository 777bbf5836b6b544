//! Durable, retried, delayable background tasks for Rust services that
//! already run Redis or MySQL/MariaDB — no message broker to operate.
//!
//! Annotate an async function with [`reliable_task`], submit through the
//! typed helper it generates, and run an [`Executor`] on a [`Storage`](storage::Storage):
//! [`MemoryStorage`] here (tests, quick starts; not durable), `RedisStorage`
//! from `executor-redis` or `MySqlStorage` from `executor-mysql` in
//! production.
//!
//! # Tutorial
//!
//! **Define** a handler. Its payload is any serde type; the attribute sets
//! its defaults (retries, backoff, deadlines):
//!
//! ```
//! use reliable_executor::prelude::*;
//! use reliable_executor::{Executor, ListQuery, MemoryStorage};
//!
//! #[derive(Serialize, Deserialize)]
//! struct OrderParam {
//!     order_id: u64,
//! }
//!
//! #[reliable_task(name = "process_order", retry_limit = 3, retry_interval = "2s", max_duration = "60s")]
//! async fn process_order(param: OrderParam, ctx: TaskContext) -> Result<(), TaskError> {
//!     // Handlers can run more than once if a worker dies mid-attempt:
//!     // key side effects by `ctx.id()` to make them idempotent.
//!     println!("processing order {} (task {}, attempt {})", param.order_id, ctx.id(), ctx.attempt());
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), reliable_executor::Error> {
//! // **Build** an executor: it finds every #[reliable_task] in the binary.
//! let executor = Executor::builder(MemoryStorage::new())
//!     .namespace("my-app")
//!     .concurrency(16)
//!     .build()
//!     .await?;
//!
//! // **Submit**: typed, so a wrong payload type does not compile.
//! // Each submit answers the task's id and what it did (created here; an
//! // idempotent or debounced repeat says `Existing` or `Debounced`).
//! let id = process_order::submit(&executor, OrderParam { order_id: 7 }).await?.id;
//! let later = process_order::with(OrderParam { order_id: 8 })
//!     .id("order_8_pay") // a business id; a duplicate is refused
//!     .delay(Duration::from_secs(30))
//!     .submit(&executor)
//!     .await?;
//! assert!(later.is_created());
//! let later = later.id;
//!
//! // **Run**: claims due tasks and runs them until shut down.
//! let running = executor.start();
//!
//! // **Query**: status, counts, pages by state.
//! let done = executor.wait_for(&id, Duration::from_secs(5)).await?;
//! assert_eq!(done.state, TaskState::Completed);
//! assert_eq!(executor.status(&later).await?.map(|t| t.state), Some(TaskState::Created));
//! let waiting = executor.list(ListQuery::new(TaskState::Created, 100)).await?;
//! assert_eq!(waiting.tasks.len(), 1);
//! executor.cancel(&later).await?;
//! assert_eq!(executor.counts().await?.get(TaskState::Cancelled), 1);
//!
//! // **Shut down**: drains running attempts, gives back leases of the rest.
//! // In a service: `executor.run_until(reliable_executor::shutdown_signal()).await?`.
//! running.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! A producer-only process (a web front end that enqueues while workers run
//! elsewhere) uses a [`Client`] instead of an executor.
//!
//! # Guarantees
//!
//! - **No loss**: a task whose submit returned `Ok` reaches a terminal state
//!   or stays queryable, through crashes of any worker at any point.
//! - **No concurrent double run**: each attempt holds a lease with a fence;
//!   a worker that lost its lease is stopped, and its late writes are refused.
//! - **At-least-once**: a task runs again only when its worker died or lost
//!   its lease; handlers must still be idempotent.
//! - **Due times respected**, and an idle executor starts a due task within
//!   milliseconds (store wake-up, not only polling).
//! - **Bounded memory**: claiming stops while all workers are busy; finished
//!   tasks are trimmed by a [`Retention`] policy.
//! - **Bad input never panics the runtime**: unknown names, undecodable or
//!   oversized payloads and invalid options get a clear error at submit or an
//!   `ERROR` state with the reason.
//!
//! See `docs/architecture.md` for the state diagram and the runtime loop.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod attempt_log;
mod client;
mod coalesce;
mod context;
mod data;
mod error;
mod executor;
mod group_commit;
mod history;
mod id;
mod listener;
mod memory;
pub mod metrics;
mod options;
mod query;
pub mod queue;
mod registry;
mod resend;
mod retry;
pub mod schedule;
mod state;
pub mod storage;
mod task;
#[cfg(feature = "testing")]
pub mod testing;
mod tiered;
mod time;
pub mod tls;

pub use attempt_log::{AttemptOutcome, AttemptRecord, AttemptSummary, MAX_ATTEMPT_LOG, MAX_ERROR_LEN};
pub use client::{Client, DEFAULT_MAX_PAYLOAD, SUBMIT_BATCH, Submit, TaskBuilder};
pub use coalesce::{CoalesceStats, Coalescer};
pub use context::{Action, IntoTaskResult, TaskContext, TaskError};
pub use data::Data;
pub use error::{BoxError, Error, Result};
pub use executor::{Executor, ExecutorBuilder, RunningExecutor, ShutdownReport, StopHandle, shutdown_signal};
pub use history::HistoryBucket;
pub use id::{MAX_ID_LEN, MAX_NAMESPACE_LEN, Namespace, TaskId, WorkerId};
pub use listener::Listener;
pub use memory::MemoryStorage;
pub use options::{DEFAULT_RETRY_LIMIT, MAX_RETRY_LIMIT, TaskOptions};
pub use query::{
    CancelOutcome, ListQuery, MAX_PAGE_SIZE, Page, Retention, StateCounts, Unreadable, WorkerInfo,
};
pub use queue::{
    ClaimPlan, DEFAULT_QUEUE, MAX_CONCURRENCY_LIMIT, MAX_PRIORITY, MAX_QUEUE_LEN, MAX_QUEUES, MAX_RATE_PER,
    MAX_RATE_STARTS, MAX_WEIGHT, QueueInfo, QueueLimits, QueueName, QueueSet, QueueShare, RateLimit,
};
pub use registry::{Handler, Registry};
pub use resend::{DEFAULT_SUBMIT_PAUSE, DEFAULT_SUBMIT_TRIES};
pub use retry::{BackoffFn, CustomBackoff, RetryPolicy, parse_duration};
pub use state::TaskState;
pub use task::{SubmitOutcome, Submitted, TaskRecord};
pub use tiered::{DEFAULT_HORIZON, Tier, TieredStorage};
pub use time::{MAX_DURATION, Timestamp};

pub use executor_macros::reliable_task;

/// What an application file needs: `use reliable_executor::prelude::*;`.
///
/// The macro and the types a handler signature names ([`TaskContext`],
/// [`TaskError`], [`Data`]), the executor and client with their bounds
/// ([`ExecutorStorage`](crate::storage::ExecutorStorage),
/// [`Storage`](crate::storage::Storage)) and [`Listener`], the records
/// a status query returns, and serde's derives.
pub mod prelude {
    pub use crate::storage::{ExecutorStorage, Storage};
    pub use crate::{
        Client, Data, Executor, Handler, ListQuery, Listener, MemoryStorage, RetryPolicy, Submit, Submitted,
        TaskContext, TaskError, TaskId, TaskOptions, TaskRecord, TaskState, reliable_task, shutdown_signal,
    };
    pub use serde::{Deserialize, Serialize};
    pub use std::time::Duration;
}

/// Used by the code `#[reliable_task]` generates. Not a public API: it may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use serde;
    pub use serde_json;

    pub use crate::registry::{AttributeSchedule, BoxFuture, InvokeFn, TaskRegistration, decode};
    pub use crate::schedule::ScheduleBuilder;
    pub use crate::storage::NewTask;
    pub use crate::{
        Data, Error, IntoTaskResult, QueueName, RetryPolicy, Submit, Submitted, TaskBuilder, TaskContext,
        TaskError, TaskId, TaskOptions,
    };
    pub use crate::{client::submit_built, data::DataNeed};
}
