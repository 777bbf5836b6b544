//! Durable, retried, delayable background tasks for Rust services that
//! already run Redis, PostgreSQL or MySQL/MariaDB — no message broker to
//! operate.
//!
//! Annotate an async function with [`reliable_task`], submit through the
//! typed helper it generates, and run an [`Executor`] on a [`Storage`](storage::Storage):
//! [`MemoryStorage`] here (tests, quick starts; not durable), `RedisStorage`,
//! `PostgresStorage` or `MySqlStorage` (features of the `reliable-executor`
//! facade) in production.
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
//!   tasks are trimmed by a [`query::Retention`] policy.
//! - **Bad input never panics the runtime**: unknown names, undecodable or
//!   oversized payloads and invalid options get a clear error at submit or an
//!   `ERROR` state with the reason.
//!
//! See `docs/architecture.md` for the state diagram and the runtime loop.
//!
//! # What is where
//!
//! The crate root holds what an application names: the executor, its
//! builder and shutdown, the client and the submit builder, what a handler
//! takes and returns, errors, ids, options, the records a status query
//! answers, and the stores of this crate. Everything else lives in the
//! module of its concept, beside that concept's limits and defaults:
//!
//! | module | holds |
//! |---|---|
//! | [`queue`] | named queues and priorities: [`queue::QueueSet`], fleet-wide [`queue::QueueLimits`], queue statistics, [`queue::MAX_PRIORITY`] |
//! | [`schedule`] | cron schedules, from the attribute or at run time |
//! | [`retry`] | retry policies: a custom backoff, [`retry::parse_duration`] |
//! | [`query`] | an operator's reads and answers: state counts, cancel outcomes, workers, unreadable records, [`query::Retention`] |
//! | [`attempt_log`] | what each earlier attempt of a task did |
//! | [`history`] | succeeded and failed attempts per task name and minute |
//! | [`id`], [`options`], [`time`] | the limits of ids, of a handler's options and of durations |
//! | [`client`], [`resend`] | the limits of a submit and the defaults of resending one whose answer was lost |
//! | [`tiered`], [`coalesce`] | the hot/cold store's horizon; debounced submits absorbed in process |
//! | [`metrics`], [`tls`] | the names of the Prometheus metrics; TLS failures told apart |
//! | [`storage`] | the driver contract: what a store implements and is handed |
//! | `testing` | the conformance suites a store runs (feature `testing`) |
//! | [`prelude`] | what `use reliable_executor::prelude::*;` brings |
//!
//! # Layers
//!
//! The source is in one folder per layer, each using only the layers listed
//! before it; a public module keeps its path whichever folder holds it:
//!
//! | folder | layer |
//! |---|---|
//! | `records/` | what a task is: the task and its states, ids, instants, queues, schedules and cron, retry policies, options, query answers, the attempt log, the throughput history, each with its limits |
//! | `storage/` | the driver contract ([`storage`]) over the records, and the group commit a store may batch its finishes with |
//! | `api/` | the user's API over the contract: the client and its resends, the submit builders, what a handler takes and returns, the registry, listeners, the handle on schedules, the coalescer |
//! | `runtime/` | the executor (claim loop, attempts, heartbeats, housekeeping, leadership, shutdown) and the leader's cron scheduler |
//! | `stores/` | the stores of the core: [`MemoryStorage`] and [`TieredStorage`] |
//!
//! Beside them, `error`, [`metrics`] and [`tls`] serve every layer and the
//! drivers, and `testing` holds the conformance suites.

#![cfg_attr(docsrs, feature(doc_cfg))]

// The layers (see "Layers" above). Their public modules are re-exported
// here, at the paths they have always had.
mod api;
mod records;
mod runtime;
pub mod storage;
mod stores;

mod error;
pub mod metrics;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;

pub use api::{client, coalesce, resend};
pub use records::{attempt_log, history, id, options, query, queue, retry, schedule, time};
pub use stores::tiered;

// What an application uses. The items of public modules are also documented
// there, with the limits and records of their concept. The facade names
// the same items one by one: keep its list equal to this one.
pub use api::context::{Action, IntoTaskResult, TaskContext, TaskError};
pub use api::data::Data;
pub use api::listener::Listener;
pub use api::registry::{Handler, Registry};
#[doc(inline)]
pub use client::{Client, Submit, TaskBuilder};
pub use error::{BoxError, Error, Result};
#[doc(inline)]
pub use id::{Namespace, TaskId, WorkerId};
#[doc(inline)]
pub use options::TaskOptions;
#[doc(inline)]
pub use query::{ListQuery, Page};
#[doc(inline)]
pub use queue::QueueName;
pub use records::state::TaskState;
pub use records::task::{SubmitOutcome, Submitted, TaskRecord};
#[doc(inline)]
pub use retry::RetryPolicy;
pub use runtime::executor::{
    Executor, ExecutorBuilder, RunningExecutor, ShutdownReport, StopHandle, shutdown_signal,
};
pub use stores::memory::MemoryStorage;
#[doc(inline)]
pub use tiered::{Tier, TieredStorage};
#[doc(inline)]
pub use time::Timestamp;

pub use executor_macros::reliable_task;

// The root paths of earlier releases, kept so that code written against
// them still compiles. Each item's one documented path is in its module;
// docs/upgrading.md lists them, old and new.
#[doc(hidden)]
pub use {
    attempt_log::{AttemptOutcome, AttemptRecord, AttemptSummary, MAX_ATTEMPT_LOG, MAX_ERROR_LEN},
    client::{DEFAULT_MAX_PAYLOAD, SUBMIT_BATCH},
    coalesce::{CoalesceStats, Coalescer},
    history::HistoryBucket,
    id::{MAX_ID_LEN, MAX_NAMESPACE_LEN},
    options::{DEFAULT_RETRY_LIMIT, MAX_RETRY_LIMIT},
    query::{CancelOutcome, MAX_PAGE_SIZE, Retention, StateCounts, Unreadable, WorkerInfo},
    queue::{
        ClaimPlan, DEFAULT_QUEUE, MAX_CONCURRENCY_LIMIT, MAX_PRIORITY, MAX_QUEUE_LEN, MAX_QUEUES,
        MAX_RATE_PER, MAX_RATE_STARTS, MAX_WEIGHT, QueueInfo, QueueLimits, QueueSet, QueueShare, RateLimit,
    },
    resend::{DEFAULT_SUBMIT_PAUSE, DEFAULT_SUBMIT_TRIES},
    retry::{BackoffFn, CustomBackoff, parse_duration},
    tiered::DEFAULT_HORIZON,
    time::MAX_DURATION,
};

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

    pub use crate::api::registry::{AttributeSchedule, BoxFuture, InvokeFn, TaskRegistration, decode};
    pub use crate::schedule::ScheduleBuilder;
    pub use crate::storage::NewTask;
    pub use crate::{
        Data, Error, IntoTaskResult, QueueName, RetryPolicy, Submit, Submitted, TaskBuilder, TaskContext,
        TaskError, TaskId, TaskOptions,
    };
    pub use crate::{api::data::DataNeed, client::submit_built};
}
