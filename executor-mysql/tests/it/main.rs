//! The integration tests of executor-mysql in one binary (one link instead
//! of one per file), against `MYSQL_URL` (default
//! `mysql://root@127.0.0.1:3306/test`). `support` holds the shared helpers.
//!
//! No `#[reliable_task]` lives here: each executor gets its handlers by hand.
//! `first_start`, `paused_claimer` and `two_processes` start this binary
//! again as child processes, naming their helper test by its full path
//! (`module::test`) for `--exact`. The tests that load the machine or check
//! a latency hold `support::serial()`, so they never run beside each other.

mod support;

mod attempt_log;
mod bad_input;
mod cancelled_calls;
mod conformance;
mod first_start;
mod migrations_and_wake;
mod neighbours;
mod options;
mod paused_claimer;
mod priority_ranks;
mod queue_limits;
mod queue_upgrade;
mod races;
mod retained_history;
mod schedules;
mod transactions;
mod two_processes;

/// The tests every SQL dialect passes alike (a submit whose answer is lost,
/// the cold tier, history rows edited by hand), from the SQL core.
mod shared {
    executor_sql::sql_dialect_tests!(crate::support::Db);
}
