//! The fault tests of executor-chaos in one binary (one link instead of one
//! per file). `common` holds the shared helpers.
//!
//! They start private redis-server, mariadbd and postgres processes, `chaos`
//! worker processes and whole chaos runs, and check timings, on CI's 2 cores: each
//! holds `common::one_at_a_time()` for its whole run, so they never overlap,
//! as when each file was a test binary of its own. No `#[reliable_task]`
//! lives here: each executor gets its handlers by hand.

mod common;

mod bad_input;
mod blocking_handler;
mod claim_stop;
mod clock_skew;
mod first_start;
mod machine_stall;
mod mysql_cancelled_statement;
mod mysql_poisoned_row;
mod mysql_restart;
mod postgres_restart;
mod redis_outage;
mod short_run;
mod stale_start;
mod tls;
mod victims;
