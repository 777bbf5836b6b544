//! Numbers sent to the scripts. Lua keeps numbers as doubles and prints
//! them with `%d`, which turns anything past 2^63 into
//! -9223372036854775808: every duration and instant handed to a script is
//! checked here against the ranges all stores share
//! ([`executor_core::time::MAX_DURATION`], [`Timestamp::MAX`]), far below 2^53,
//! so script arithmetic stays exact.

use std::time::Duration;

use executor_core::{
    Result, Timestamp,
    storage::{check_duration, check_instant},
    time::MAX_DURATION,
};

/// `d` in whole milliseconds, if it is at most [`MAX_DURATION`].
///
/// # Errors
/// [`Error::Invalid`] naming `what` and the range.
pub(crate) fn duration_ms(what: &'static str, d: Duration) -> Result<String> {
    check_duration(what, d)?;
    Ok(d.as_millis().to_string())
}

/// `d` in whole milliseconds, at most [`MAX_DURATION`]: for settings where
/// a longer value means the same as the longest (a retention of 2,000 years
/// keeps as much as one of 1,000).
pub(crate) fn clamped_ms(d: Duration) -> String {
    d.min(MAX_DURATION).as_millis().to_string()
}

/// `t` in milliseconds since the epoch, if it is at most [`Timestamp::MAX`].
///
/// # Errors
/// [`Error::Invalid`] naming `what` and the range.
pub(crate) fn instant_ms(what: &'static str, t: Timestamp) -> Result<String> {
    check_instant(what, t)?;
    Ok(t.as_millis().to_string())
}

/// A count for a script (`limit`s): at most `max`.
pub(crate) fn count(n: usize, max: usize) -> String {
    n.min(max).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes_are_refused_not_wrapped() {
        assert!(duration_ms("delay", Duration::MAX).is_err());
        assert_eq!(duration_ms("delay", MAX_DURATION).ok(), Some(MAX_DURATION.as_millis().to_string()));
        assert!(instant_ms("run_at", Timestamp::from_millis(u64::MAX)).is_err());
        assert!(instant_ms("run_at", Timestamp::MAX).is_ok());
        assert_eq!(clamped_ms(Duration::MAX), MAX_DURATION.as_millis().to_string());
        assert_eq!(count(usize::MAX, 1000), "1000");
    }
}
