//! The memory store's clock: wall-clock time at creation plus tokio's
//! monotonic time since, so tests with paused time (`start_paused = true`)
//! move it with `tokio::time::advance` or auto-advance.

use tokio::time::Instant;

use crate::Timestamp;

/// A monotonic store clock in epoch milliseconds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Clock {
    base: Timestamp,
    start: Instant,
}

impl Clock {
    /// Starts at this machine's wall clock.
    pub(super) fn new() -> Self {
        Self { base: Timestamp::now_system(), start: Instant::now() }
    }

    /// The store's now. Never goes backwards, even if the wall clock does.
    pub(super) fn now(&self) -> Timestamp {
        self.base.saturating_add(self.start.elapsed())
    }

    /// The tokio instant at which [`Clock::now`] reaches `ts` (in the past if
    /// `ts` has passed), so a sleep until it wakes exactly when a due time
    /// arrives. `None` when `ts` is too far away for an `Instant`.
    pub(super) fn instant_of(&self, ts: Timestamp) -> Option<Instant> {
        self.start.checked_add(ts.since(self.base))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
