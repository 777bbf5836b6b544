//! The connections this driver's statements run on: the SQL core's
//! (`executor_sql::conn`: a free list beside the pool, closed rather than
//! reused after a dropped operation) over sqlx's Postgres driver.
//!
//! Every statement of this crate is autocommit, so a process that stops
//! between two of them (SIGSTOP, a pause, a partition) holds no row lock,
//! with one exception: the claim of a queue with limits (`limits.rs`) is a
//! short transaction with an idle timeout of 2 s, after which the server
//! ends the session and releases its locks. Every connection taken from the
//! pool first gets `sql/conn/session_setup.sql`. Three of the pool's
//! connections are left: two to callers of `PostgresStorage::pool`, one to
//! the listener (`wake.rs`).

pub(crate) use executor_sql::conn::{RunOn, fetch_all_sent};

/// The free list and the bound on connections out at once.
pub(crate) type Conns = executor_sql::conn::Conns<sqlx::Postgres>;
