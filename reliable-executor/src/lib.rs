//! Durable, retried, delayable background tasks for Rust services that
//! already run Redis, PostgreSQL or MySQL/MariaDB: no message broker to
//! operate.
//!
//! This is the crate an application adds. It re-exports the runtime of
//! `reliable-executor-core` (the root holds what an application names; the
//! modules hold the rest, each beside its limits and defaults: [`queue`],
//! [`schedule`], [`query`], [`retry`], ..., and [`storage`], the contract a
//! store implements) and, behind features, a store for each server,
//! `AnyStorage` and the admin:
//!
//! ```toml
//! [dependencies]
//! reliable-executor = { version = "0.1", features = ["postgres", "tls"] }
//! ```
//!
//! | feature | brings |
//! |---|---|
//! | (none) | the runtime, the `#[reliable_task]` attribute, [`MemoryStorage`] |
//! | `redis` | [`redis::RedisStorage`] (Redis, Redis Cluster) |
//! | `postgres` | [`postgres::PostgresStorage`] (LISTEN/NOTIFY wake-ups, transactional submit) |
//! | `mysql` | [`mysql::MySqlStorage`] (MySQL 8, MariaDB 10.6+, transactional submit) |
//! | `any` | [`any::AnyStorage`]: the store chosen by a URL at run time, among those enabled |
//! | `admin` | [`admin`]: Prometheus exporter, HTTP admin API, dashboard |
//! | `tls` | TLS (rustls) for each enabled store |
//! | `testing` | [`testing`]: the conformance suites a store runs in its tests |
//! | `full` | all of the above but `testing` |
//!
//! ```
//! use reliable_executor::prelude::*;
//! use reliable_executor::{Executor, MemoryStorage};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Resize {
//!     image: String,
//! }
//!
//! #[reliable_task(name = "resize", retry_limit = 3)]
//! async fn resize(param: Resize) -> Result<(), TaskError> {
//!     println!("resizing {}", param.image);
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), reliable_executor::Error> {
//! let executor = Executor::builder(MemoryStorage::new()).namespace("app").build().await?;
//! let id = resize::submit(&executor, Resize { image: "cat.png".into() }).await?.id;
//! let running = executor.start();
//! assert_eq!(executor.wait_for(&id, Duration::from_secs(5)).await?.state, TaskState::Completed);
//! running.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! The guide starts at the project's README; each store's page (`docs/`)
//! says how to run it in production.

#![cfg_attr(docsrs, feature(doc_cfg))]

// The core's documented root, name by name: a glob re-export would also
// show the core's hidden paths of earlier releases in these docs. Keep the
// two lists equal.
pub use executor_core::{
    Action, BoxError, Client, Data, Error, Executor, ExecutorBuilder, Handler, IntoTaskResult, ListQuery,
    Listener, MemoryStorage, Namespace, Page, QueueName, Registry, Result, RetryPolicy, RunningExecutor,
    ShutdownReport, StopHandle, Submit, SubmitOutcome, Submitted, TaskBuilder, TaskContext, TaskError,
    TaskId, TaskOptions, TaskRecord, TaskState, Tier, TieredStorage, Timestamp, WorkerId, reliable_task,
    shutdown_signal,
};
pub use executor_core::{
    attempt_log, client, coalesce, history, id, metrics, options, prelude, query, queue, resend, retry,
    schedule, storage, tiered, time, tls,
};

// The paths of earlier releases (see the core's root), `__private` for the
// code `#[reliable_task]` generates, and the conformance macros, which every
// `#[macro_export]` puts at the root.
#[doc(hidden)]
pub use executor_core::*;

#[cfg(feature = "testing")]
pub mod testing {
    //! The conformance suites a store runs in its tests (feature `testing`):
    //! one check per state transition and invariant, a macro per ability that
    //! turns them into tests, and [`Intercepted`], a store wrapper for test
    //! doubles.
    //!
    //! ```
    //! use reliable_executor::{MemoryStorage, Namespace, testing};
    //!
    //! async fn fresh() -> (MemoryStorage, Namespace) {
    //!     (MemoryStorage::new(), testing::unique_namespace("mem"))
    //! }
    //!
    //! async fn cleanup(storage: &MemoryStorage, ns: &Namespace) {
    //!     storage.remove_namespace(ns);
    //! }
    //!
    //! reliable_executor::testing::storage_conformance_tests!(fresh, cleanup);
    //! # fn main() {}
    //! ```
    //!
    //! Each check is also a plain async function, `check(&storage,
    //! &namespace)`; each macro's page says which checks it runs and how a
    //! store leaves one out.

    pub use executor_core::testing::*;
    // Named one by one: a module re-exported whole from another crate loses
    // the macros, whose root paths are hidden.
    #[doc(inline)]
    pub use executor_core::testing::{
        attempt_log_conformance_tests, history_conformance_tests, queue_conformance_tests,
        queue_limit_conformance_tests, run_now_conformance_tests, schedule_conformance_tests,
        storage_conformance_tests, tier_conformance_tests,
    };
}

/// The Redis store (feature `redis`).
#[cfg(feature = "redis")]
pub mod redis {
    pub use executor_redis::*;
}

/// The MySQL and MariaDB store (feature `mysql`).
#[cfg(feature = "mysql")]
pub mod mysql {
    pub use executor_mysql::*;
}

/// The PostgreSQL store (feature `postgres`).
#[cfg(feature = "postgres")]
pub mod postgres {
    pub use executor_postgres::*;
}

/// `AnyStorage`: the store chosen by a URL at run time (feature `any`).
#[cfg(feature = "any")]
pub mod any {
    pub use executor_any::*;
}

/// The Prometheus exporter, HTTP admin API and dashboard (feature `admin`).
#[cfg(feature = "admin")]
pub mod admin {
    pub use executor_admin::*;
}

#[cfg(feature = "admin")]
pub use executor_admin::Admin;
#[cfg(feature = "any")]
pub use executor_any::AnyStorage;
#[cfg(feature = "mysql")]
pub use executor_mysql::MySqlStorage;
#[cfg(feature = "postgres")]
pub use executor_postgres::PostgresStorage;
#[cfg(feature = "redis")]
pub use executor_redis::RedisStorage;
