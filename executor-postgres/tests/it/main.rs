//! The integration tests of executor-postgres in one binary, against
//! `POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! `support` holds the shared helpers.

mod support;

mod attempt_log;
mod bad_input;
mod conformance;
mod first_start;
mod stopped_holder;
mod transactions;

/// The tests every SQL dialect passes alike (a submit whose answer is lost,
/// the cold tier, history rows edited by hand), from the SQL core.
mod shared {
    executor_sql::sql_dialect_tests!(crate::support::Db);
}
