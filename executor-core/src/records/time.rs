//! Timestamps as milliseconds since the Unix epoch, on the store's clock.

use std::{
    fmt,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The longest duration any option, delay or window may have: 1,000 years
/// of 365 days. Past it a store's arithmetic could overflow (Lua numbers,
/// `BIGINT`), so every longer value is refused with [`Error::Invalid`] at
/// submit, at build and in `finish`, on every store alike. For "no limit",
/// leave the option unset.
pub const MAX_DURATION: Duration = Duration::from_secs(1_000 * 365 * 86_400);

/// A point in time in milliseconds since the Unix epoch.
///
/// Due times, leases and deadlines are stamped by the store's clock (Redis
/// `TIME`, MySQL `NOW(3)`), never by a worker's, so a worker whose clock is off
/// still respects them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The latest instant a task may be due: 9999-12-31T23:59:59.999Z.
    /// Later instants are refused with [`Error::Invalid`].
    pub const MAX: Timestamp = Timestamp(253_402_300_799_999);

    /// From milliseconds since the epoch.
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// This machine's wall clock. Stores use their own clock instead.
    pub fn now_system() -> Self {
        let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        Self(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    /// From a [`SystemTime`]; times before the epoch become the epoch.
    pub fn from_system(t: SystemTime) -> Self {
        let ms = t.duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        Self(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    /// As a [`SystemTime`].
    pub fn to_system(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }

    /// `self + d`, saturating.
    pub fn saturating_add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
    }

    /// `self - d`, saturating at the epoch.
    pub fn saturating_sub(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Checks that `d` is at most [`MAX_DURATION`]: the one wording of this
/// range on every store.
///
/// # Errors
/// [`Error::Invalid`] naming `what` and the range.
pub fn check_duration(what: &'static str, d: Duration) -> Result<()> {
    if d > MAX_DURATION {
        return Err(Error::invalid(
            what,
            format!(
                "{d:?} is longer than the maximum of {} days (1,000 years); leave it unset for no limit",
                MAX_DURATION.as_secs() / 86_400
            ),
        ));
    }
    Ok(())
}

/// Checks that `t` is at most [`Timestamp::MAX`]: the one wording of this
/// range on every store.
///
/// # Errors
/// [`Error::Invalid`] naming `what` and the range.
pub fn check_instant(what: &'static str, t: Timestamp) -> Result<()> {
    if t > Timestamp::MAX {
        return Err(Error::invalid(
            what,
            format!(
                "{} ms since the epoch is past the latest instant, {} (year 9999)",
                t.0,
                Timestamp::MAX.0
            ),
        ));
    }
    Ok(())
}

/// Duration in whole milliseconds, saturating (stores keep milliseconds).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
