//! MySQL 8 / MariaDB 10.6+ storage for `executor-core`, on `sqlx`.
//!
//! [`MySqlStorage`] keeps tasks in one InnoDB table (namespaces share it
//! through an `ns` column that leads every key) and leadership in another.
//! The schema is embedded ([`MySqlStorage::migrate`], run by
//! [`MySqlStorage::connect`] unless turned off, serialised across processes
//! by a server lock). Every state change is an autocommit statement
//! conditional on the task's state and fence; no transaction waits for the
//! client while it holds a lock, so a stopped or partitioned process holds
//! nothing others need. Claims pick candidates with `FOR UPDATE SKIP
//! LOCKED` and take them with one conditional UPDATE, so concurrent
//! claimers never hand a task out twice. Times come from the server's
//! clock. See `docs/mysql.md` for the schema, the query plans and the
//! wake-up latency.
//!
//! ```no_run
//! # async fn run() -> executor_core::Result<()> {
//! use executor_core::{Namespace, Storage};
//! use executor_mysql::MySqlStorage;
//!
//! let storage = MySqlStorage::connect("mysql://root@127.0.0.1:3306/test").await?;
//! let counts = storage.counts(&Namespace::new("my-app")?).await?;
//! println!("{} tasks", counts.total());
//! # Ok(())
//! # }
//! ```

mod admin;
mod claim;
mod conn;
mod error;
mod finish;
mod housekeeping;
mod leader;
mod options;
mod row;
mod sql;
mod storage;
mod submit;
mod tier;
mod wake;

pub use options::MySqlOptions;
pub use storage::{MIGRATIONS_TABLE, MySqlStorage};
