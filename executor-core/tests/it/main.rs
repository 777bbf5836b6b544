//! Runtime tests on MemoryStorage, with tokio's paused clock where time matters.

mod failures;
mod hardening;
mod lifecycle;
mod retries;
mod spy;
mod support;
