//! The runtime: the [`Executor`](crate::Executor) (claim loop, worker pool,
//! attempts with their timeouts and heartbeats, housekeeping and the
//! leader's duties, history flushes, shutdown) and the leader's cron
//! scheduler.

pub(crate) mod executor;
pub(crate) mod scheduler;
