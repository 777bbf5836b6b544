//! Chaos harness and fault tests for the reliable executor.
//!
//! The `chaos` binary has two roles: `chaos run` (the controller) starts a
//! private store and K worker processes, submits M tasks, and while they run
//! kills, pauses and restarts things; then it checks, from append-only
//! ledgers the workers write and from the store, that no task was lost, no
//! two attempts of a task ran at once, every re-run had a cause, and the
//! run's per-second cron schedule gave one task per tick, a tick passing
//! without one only during a leader outage ([`cron`]).
//! `chaos worker` is the process it starts. See `docs/reliability.md`.
//!
//! The pieces are a library so the fault tests in `tests/` reuse them:
//!
//! ```
//! use executor_chaos::ledger::{Event, Ledger, read_dir};
//!
//! let dir = executor_chaos::process::TempDir::new("ledger-doc")?;
//! let ledger = Ledger::open(&dir.path().join("w.log"))?;
//! ledger.record(&Event::HeartbeatErr { pid: 1, t: 2 });
//! let (events, torn) = read_dir(dir.path())?;
//! assert_eq!((events.len(), torn), (1, 0));
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod check;
pub mod controller;
pub mod cron;
pub mod first_start;
pub mod fleet;
pub mod ledger;
pub mod postgres;
pub mod process;
pub mod recorder;
pub mod server;
pub mod store;
pub mod summary;
pub mod tiered;
pub mod victims;
pub mod worker;
