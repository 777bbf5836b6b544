//! MySQL 8 / MariaDB 10.6+ storage for `executor-core`, on `sqlx`.
//!
//! [`MySqlStorage`] keeps tasks in one InnoDB table (namespaces share it
//! through an `ns` column that leads every key) and leadership in another.
//! The schema is embedded ([`MySqlStorage::migrate`], run by
//! [`MySqlStorage::connect`] unless turned off). Every state change is one
//! statement conditional on the task's fence, or one short READ COMMITTED
//! transaction: claims use `FOR UPDATE SKIP LOCKED`, so concurrent claimers
//! never block each other or hand a task out twice. Times come from the
//! server's clock. See `docs/mysql.md` for the schema, the query plans and
//! the wake-up latency.
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
