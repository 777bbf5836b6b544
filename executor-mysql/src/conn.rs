//! The connections this driver's statements run on: the SQL core's
//! (`executor_sql::conn`: a free list beside the pool, closed rather than
//! reused after a dropped operation) over sqlx's MySql driver.
//!
//! Every statement of this crate is autocommit, so a process that stops
//! between two of them (SIGSTOP, a pause, a partition) holds no row lock,
//! with one exception: the claim of a queue with limits (`limits.rs`) is a
//! short transaction, whose session the server closes after 2 s idle, so a
//! stopped holder keeps its locks at most that long. Every connection taken
//! from the pool first gets `sql/conn/session_setup.sql` (READ COMMITTED, a
//! 2 s lock wait). Two of the pool's connections are left to callers of
//! `MySqlStorage::pool` and the migrator.

pub(crate) use executor_sql::conn::{RunOn, execute_sent};

/// The free list and the bound on connections out at once.
pub(crate) type Conns = executor_sql::conn::Conns<sqlx::MySql>;
