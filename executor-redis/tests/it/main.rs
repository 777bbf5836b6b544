//! The integration tests of executor-redis in one binary (one link instead
//! of one per file). `common` holds the shared connection helpers and the
//! hand-made damage of `corrupt_*`. Most tests need `REDIS_URL` (default
//! `redis://127.0.0.1:6379`), `cluster` needs `REDIS_CLUSTER_URL`, and
//! `restart` runs a redis-server of its own.
//!
//! No `#[reliable_task]` lives here: each executor gets its handlers by hand.
//! `two_processes` starts this binary again as child processes, naming its
//! helper test by its full path (`two_processes::child_executor`).

mod common;

mod bad_input;
mod builder;
mod cluster;
mod conformance;
mod corrupt_admin;
mod corrupt_attempt_log;
mod corrupt_history;
mod corrupt_lease;
mod corrupt_schedule;
mod corrupt_submit;
mod functions;
mod limits;
mod outcome;
mod partitioned;
mod queues;
mod restart;
mod scripts;
mod two_processes;
mod wake;
