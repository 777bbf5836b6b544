//! Every integration test of executor-core, in one binary (one link instead
//! of one per file): the runtime on MemoryStorage with tokio's paused clock
//! where time matters, the coalescer, the conformance suite on memory and
//! tiered-memory stores, TieredStorage itself, and the Send + Sync checks.
//!
//! No `#[reliable_task]` lives in this binary: every handler is registered by
//! hand on its own builder, so the files share no registry.

mod coalesce;
mod conformance_memory;
mod defaults;
mod earlier_paths;
mod failures;
mod hardening;
mod history;
mod lifecycle;
mod limits;
mod queues;
mod retention;
mod retries;
mod rolling_deploy;
mod sampling;
mod send_sync;
mod spy;
mod support;
mod tiered;
