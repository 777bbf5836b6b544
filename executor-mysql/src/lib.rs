//! MySQL 8 / MariaDB 10.6+ storage for `executor-core`, on `sqlx`.
//!
//! [`MySqlStorage`] keeps tasks in one InnoDB table (namespaces share it
//! through an `ns` column that leads every key), and leadership, workers'
//! announcements and cron schedules in one table each.
//! The schema is embedded ([`MySqlStorage::migrate`], run by
//! [`MySqlStorage::connect`] unless turned off, serialised across processes
//! by a server lock). Every state change is an autocommit statement
//! conditional on the task's state and fence; no transaction waits for the
//! client while it holds a lock, so a stopped or partitioned process holds
//! nothing others need (the one exception, the claim of a queue with
//! fleet-wide limits, is a transaction the server ends after 2 s idle). Claims pick candidates with `FOR UPDATE SKIP
//! LOCKED` and take them with one conditional UPDATE, so concurrent
//! claimers never hand a task out twice. Times come from the server's
//! clock. See `docs/mysql.md` for the schema, the query plans and the
//! wake-up latency.
//!
//! ```no_run
//! # async fn run() -> executor_core::Result<()> {
//! use executor_core::{Namespace, storage::Storage};
//! use reliable_executor_mysql::MySqlStorage;
//!
//! let storage = MySqlStorage::connect("mysql://root@127.0.0.1:3306/test").await?;
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
/// Settings of a [`MySqlStorage`]; [`MySqlStorage::connect`] uses the defaults.
///
/// ```no_run
/// # async fn run() -> executor_core::Result<()> {
/// use std::time::Duration;
/// use reliable_executor_mysql::MySqlOptions;
///
/// let storage = MySqlOptions::new()
///     .max_connections(16)
///     .poll_interval(Duration::from_millis(10), Duration::from_millis(500))
///     .connect("mysql://root@127.0.0.1:3306/test")
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
/// use reliable_executor_mysql::MySqlOptions;
///
/// assert!(MySqlOptions::new().validate().is_ok());
/// assert!(MySqlOptions::new().acquire_timeout(Duration::ZERO).validate().is_err());
/// ```
pub type MySqlOptions = executor_sql::SqlOptions<MySqlDialect>;
/// The `sqlx` this driver is built on, for the transactions that
/// `submit_in` joins: a `sqlx::Transaction` of this version's MySQL driver.
pub use sqlx;
pub use storage::{MIGRATIONS_TABLE, MySqlDialect};

/// Tasks in MySQL 8 or MariaDB 10.6+, through a `sqlx` pool.
///
/// One table set holds every namespace (the `ns` column leads every key).
/// Every state change is one autocommit statement conditional on the
/// task's state and fence; no statement waits inside a transaction for the
/// client, so a stopped process holds no lock (except a queue with limits'
/// row, for at most 2 s: see `docs/mysql.md`, Queues and priorities). All times come from the
/// server's clock. Cheap to clone: clones share the pool
/// and the in-process wake-up.
///
/// ```no_run
/// # async fn run() -> executor_core::Result<()> {
/// use reliable_executor_mysql::MySqlStorage;
/// let storage = MySqlStorage::connect("mysql://root@127.0.0.1:3306/test").await?;
/// # drop(storage);
/// # Ok(())
/// # }
/// ```
pub type MySqlStorage = executor_sql::SqlStorage<MySqlDialect>;
