//! Durable, retried, delayable background tasks for Rust services that
//! already run Redis, PostgreSQL or MySQL/MariaDB: no message broker to
//! operate.
//!
//! This is the crate an application adds. It re-exports the runtime
//! (everything at this crate's root, from `reliable-executor-core`) and,
//! behind features, a store for each server, `AnyStorage` and the admin:
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

pub use executor_core::*;

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
