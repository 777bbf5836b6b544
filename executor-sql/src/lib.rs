//! The SQL core of reliable-executor: the mechanism its SQL drivers share,
//! written once and generic over the database (as sqlx writes its pool
//! once over `sqlx::Database`).
//!
//! A driver (`reliable-executor-mysql`, `reliable-executor-postgres`) owns
//! what truly differs between dialects: its statements (one `.sql` file
//! each), submit, the claim and its limits, the notifications, the reads
//! its statements shape differently (the next due time, the queue
//! figures, the tier's due rows), the migrations, and which server errors
//! mean what ([`ErrorClass`]). This crate owns:
//!
//! - [`SqlStorage`]: the one storage type of every dialect
//!   (`MySqlStorage` is `SqlStorage<MySqlDialect>`), with the core's
//!   `Storage` and ability traits written once over the dialect's parts
//!   ([`dialect`]: one trait per module of a driver);
//! - [`SqlOptions`]: how any of them connects and behaves;
//! - [`conn`]: the connections a storage's own statements run on (a free
//!   list beside the sqlx pool, closed rather than reused after a dropped
//!   operation), and whether a failed statement was sent;
//! - [`error`]: turning sqlx errors into [`executor_core::Error`] by their
//!   type and the dialect's classes, retrying lock conflicts, and the
//!   "outcome unknown" of a submit whose answer was lost;
//! - [`cursor`]: where the next page of a list starts;
//! - [`finish`]: ending attempts, alone or in batches of completions,
//!   concurrent finishes sharing one batch (group commit);
//! - [`row`]: reading task rows, whatever the dialect's column types, and
//!   moving a row that cannot run to `ERROR`;
//! - [`submit`]: what a submit checks alike on every dialect;
//! - [`wait`]: an idle claimer's wait for work;
//! - [`queues`] and [`limits`]: pausing a queue, removing its limits, the
//!   queue list, and what a claim knows of limits;
//! - the reads of one task and of a list page, the tier moves, an
//!   operator's changes to one task, leadership, the workers'
//!   announcements and cron schedules, on [`stmt`]: the statements run on
//!   every dialect, each dialect's file of the same name with its
//!   parameters bound by name (optional lines picked by
//!   [`stmt::query_only`]);
//! - `testing` (feature `testing`): the tests every dialect passes alike,
//!   for a driver's test binary (`sql_dialect_tests!`);
//! - [`sql!`]: a statement file, loaded at compile time without its
//!   leading comment.
//!
//! Applications do not use this crate directly.

mod admin;
pub mod conn;
pub mod cursor;
pub mod dialect;
pub mod error;
pub mod finish;
mod history;
mod leader;
pub mod limits;
mod options;
mod query;
pub mod queues;
pub mod row;
mod schedule;
pub mod schema;
mod statement;
pub mod stmt;
mod storage;
pub mod submit;
#[cfg(feature = "testing")]
pub mod testing;
mod tier;
pub mod wait;

pub use dialect::Dialect;
pub use error::ErrorClass;
pub use options::SqlOptions;
#[doc(hidden)]
pub use statement::body;
pub use statement::unused_statement_files;
pub use storage::SqlStorage;
