//! PostgreSQL 13+ storage for `executor-core`, on `sqlx`.
//!
//! [`PostgresStorage`] keeps tasks in one table (namespaces share it
//! through an `ns` column that leads every key), and leadership, workers'
//! announcements, cron schedules and queue controls in one table each.
//! The schema is embedded ([`PostgresStorage::migrate`], run by
//! [`PostgresStorage::connect`] unless turned off, serialised across
//! processes by an advisory lock). Every state change is an autocommit
//! statement conditional on the task's state and fence; no transaction
//! waits for the client while it holds a lock, so a stopped or partitioned
//! process holds nothing others need (the one exception, the claim of a
//! queue with fleet-wide limits, is a transaction the server ends after
//! 2 s idle). A claim is one statement: `UPDATE ... FROM (SELECT ... FOR
//! UPDATE SKIP LOCKED LIMIT n) RETURNING ...`, so concurrent claimers never
//! hand a task out twice. Times come from the server's clock.
//!
//! Two things set it apart from the MySQL driver:
//!
//! - **Wake-ups across processes**: a trigger NOTIFYs when a task starts
//!   waiting, and every storage LISTENs, so an idle claimer in any process
//!   starts a due task within milliseconds instead of at its next poll.
//! - **Transactional submits**: [`PostgresStorage::submit_in`] inserts the
//!   task inside the caller's own transaction: commit, and the task exists
//!   (and wakes claimers); roll back, and it never did.
//!
//! See `docs/postgres.md` for the schema, the query plans and the figures.
//!
//! ```no_run
//! # async fn run() -> executor_core::Result<()> {
//! use executor_core::{Namespace, storage::Storage};
//! use reliable_executor_postgres::PostgresStorage;
//!
//! let storage = PostgresStorage::connect("postgres://postgres@127.0.0.1:5432/test").await?;
//! let counts = storage.counts(&Namespace::new("my-app")?).await?;
//! println!("{} tasks", counts.total());
//! # Ok(())
//! # }
//! ```

mod claim;
mod conn;
mod error;
mod finish;
mod history;
mod housekeeping;
mod limits;
mod queues;
mod sql;
mod storage;
mod submit;
mod tier;
mod wake;

pub use executor_sql::SqlStorage;
/// Settings of a [`PostgresStorage`]; [`PostgresStorage::connect`] uses the defaults.
///
/// ```no_run
/// # async fn run() -> executor_core::Result<()> {
/// use std::time::Duration;
/// use reliable_executor_postgres::PostgresOptions;
///
/// let storage = PostgresOptions::new()
///     .max_connections(16)
///     .poll_interval(Duration::from_millis(10), Duration::from_millis(500))
///     .connect("postgres://postgres@127.0.0.1:5432/test")
///     .await?;
/// # drop(storage);
/// # Ok(())
/// # }
/// ```
///
/// Every option is checked against its range before anything is sent:
///
/// ```
/// use std::time::Duration;
/// use reliable_executor_postgres::PostgresOptions;
///
/// assert!(PostgresOptions::new().validate().is_ok());
/// assert!(PostgresOptions::new().acquire_timeout(Duration::ZERO).validate().is_err());
/// ```
pub type PostgresOptions = executor_sql::SqlOptions<PostgresDialect>;
/// The `sqlx` this driver is built on, for the transactions that
/// `submit_in` joins: a `sqlx::Transaction` of this version's PostgreSQL driver.
pub use sqlx;
pub use storage::{MIGRATIONS_TABLE, PostgresDialect};

/// Tasks in PostgreSQL 13+, through a `sqlx` pool.
///
/// One table set holds every namespace (the `ns` column leads every key).
/// Every state change is one autocommit statement conditional on the
/// task's state and fence; no statement waits inside a transaction for the
/// client, so a stopped process holds no lock (except a queue with limits'
/// row, for at most 2 s: see `docs/postgres.md`). All times come from the
/// server's clock. Idle claimers in every process are woken by
/// LISTEN/NOTIFY when a task starts waiting. Cheap to clone: clones share
/// the pool, the listener and the in-process wake-ups.
///
/// ```no_run
/// # async fn run() -> executor_core::Result<()> {
/// use reliable_executor_postgres::PostgresStorage;
/// let storage = PostgresStorage::connect("postgres://postgres@127.0.0.1:5432/test").await?;
/// # drop(storage);
/// # Ok(())
/// # }
/// ```
pub type PostgresStorage = executor_sql::SqlStorage<PostgresDialect>;
