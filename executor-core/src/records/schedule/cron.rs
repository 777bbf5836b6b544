//! A cron expression in a time zone: croner's grammar (5 fields, or 6 with
//! seconds first; `L`, `W`, `#`, names) and jiff's time zones, with the tz
//! database built into the binary.

use std::{fmt, str::FromStr};

use croner::Cron as Pattern;
use jiff::{Timestamp as Instant, Zoned, tz::TimeZone};

use crate::{Error, Result, Timestamp};

/// A parsed cron expression in a time zone.
///
/// Daylight saving time follows croner's rules: a wall-clock time that does
/// not exist on the spring-forward day (02:30 in Berlin on the last Sunday
/// of March) fires once at the first instant after the gap (03:00); a
/// fixed time in the hour that repeats in autumn fires once, at its first
/// occurrence; an interval expression (`*/15 * * * *`) fires in both copies
/// of the repeated hour, as the clock shows them.
///
/// ```
/// use reliable_executor::{Timestamp, schedule::Cron};
///
/// let cron = Cron::new("0 30 2 * * *", "Europe/Berlin")?;
/// // 2026-03-29: Berlin jumps from 02:00 to 03:00; 02:30 does not exist.
/// let before = Timestamp::from_millis(1_774_742_400_000); // 2026-03-29T00:00:00Z
/// let next = cron.next_after(before).expect("a next tick");
/// assert_eq!(next.as_millis(), 1_774_746_000_000); // 03:00 CEST = 01:00Z
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone)]
pub struct Cron {
    pattern: Pattern,
    zone: TimeZone,
    expression: String,
    timezone: String,
}

impl fmt::Debug for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cron({:?} in {})", self.expression, self.timezone)
    }
}

impl Cron {
    /// Parses `expression` (5 fields, or 6 with seconds first) for the time
    /// zone `timezone` (an IANA name such as `Europe/Berlin`, or `UTC`).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the bad expression or zone.
    pub fn new(expression: &str, timezone: &str) -> Result<Self> {
        let pattern = Pattern::from_str(expression)
            .map_err(|e| Error::invalid("cron expression", format!("`{expression}`: {e}")))?;
        let zone = TimeZone::get(timezone).map_err(|e| {
            Error::invalid("time zone", format!("`{timezone}` is not a known IANA time zone ({e})"))
        })?;
        Ok(Self { pattern, zone, expression: expression.to_owned(), timezone: timezone.to_owned() })
    }

    /// The expression as given.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The time zone's name as given.
    pub fn timezone(&self) -> &str {
        &self.timezone
    }

    fn zoned(&self, t: Timestamp) -> Option<Zoned> {
        let ms = i64::try_from(t.as_millis()).ok()?;
        Some(Instant::from_millisecond(ms).ok()?.to_zoned(self.zone.clone()))
    }

    fn stamp(z: &Zoned) -> Option<Timestamp> {
        u64::try_from(z.timestamp().as_millisecond()).ok().map(Timestamp::from_millis)
    }

    /// The first tick strictly after `t`; `None` when there is none (an
    /// expression that never matches again, or past the year 9999).
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let next = self.pattern.find_next_occurrence(&self.zoned(t)?, false).ok()?;
        Self::stamp(&next).filter(|n| *n > t && *n <= Timestamp::MAX)
    }

    /// The latest tick at or before `t`, if any.
    pub fn latest_at(&self, t: Timestamp) -> Option<Timestamp> {
        let prev = self.pattern.find_previous_occurrence(&self.zoned(t)?, true).ok()?;
        Self::stamp(&prev).filter(|p| *p <= t)
    }

    /// The ticks in `(after, until]`, oldest first, at most the `max` latest
    /// of them.
    pub fn ticks_between(&self, after: Timestamp, until: Timestamp, max: usize) -> Vec<Timestamp> {
        let mut out = Vec::new();
        let mut at = until;
        let mut inclusive = true;
        while out.len() < max {
            let Some(z) = self.zoned(at) else { break };
            let Ok(prev) = self.pattern.find_previous_occurrence(&z, inclusive) else { break };
            match Self::stamp(&prev) {
                Some(p) if p > after && p <= at => {
                    out.push(p);
                    at = p;
                    inclusive = false;
                }
                _ => break,
            }
        }
        out.reverse();
        out
    }
}

/// `t` in RFC 3339, UTC, to the second (`2026-12-01T01:00:00Z`), or with
/// milliseconds when it has some.
pub(super) fn rfc3339(t: Timestamp) -> String {
    let ms = i64::try_from(t.as_millis()).unwrap_or(i64::MAX);
    match Instant::from_millisecond(ms) {
        Ok(i) if ms % 1_000 == 0 => i.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Ok(i) => i.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        Err(_) => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        let i: Instant = s.parse().expect("a test instant");
        Timestamp::from_millis(u64::try_from(i.as_millisecond()).expect("after 1970"))
    }

    fn day_of(cron: &Cron, from: &str, until: &str) -> Vec<String> {
        cron.ticks_between(at(from), at(until), 10_000).into_iter().map(rfc3339).collect()
    }

    #[test]
    fn bad_expressions_and_zones_are_refused_by_name() {
        let e = Cron::new("61 * * * *", "UTC").expect_err("minute 61");
        assert!(e.to_string().contains("61 * * * *"), "{e}");
        let e = Cron::new("*/5 * * * *", "Europe/Berlinn").expect_err("unknown zone");
        assert!(e.to_string().contains("Europe/Berlinn"), "{e}");
        assert!(Cron::new("*/5 * * * *", "America/New_York").is_ok());
        assert!(Cron::new("0 0 2 * * *", "UTC").is_ok(), "seconds are optional");
    }

    #[test]
    fn berlin_spring_forward_fires_a_missing_time_once_after_the_gap() -> Result<()> {
        // 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z).
        let daily = Cron::new("30 2 * * *", "Europe/Berlin")?;
        let ticks = day_of(&daily, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z");
        assert_eq!(ticks, ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]);
        // Every 30 minutes: 01:30 CET, then 03:00 CEST; nothing in the gap, nothing twice.
        let half = Cron::new("*/30 * * * *", "Europe/Berlin")?;
        let ticks = day_of(&half, "2026-03-29T00:15:00Z", "2026-03-29T01:45:00Z");
        assert_eq!(ticks, ["2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"]);
        Ok(())
    }

    #[test]
    fn berlin_fall_back_fires_a_fixed_time_once_and_an_interval_in_both_hours() -> Result<()> {
        // 2026-10-25 03:00 CEST -> 02:00 CET: 02:00-02:59 happens twice
        // (00:00Z-00:59Z and 01:00Z-01:59Z).
        let daily = Cron::new("30 2 * * *", "Europe/Berlin")?;
        let ticks = day_of(&daily, "2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z");
        assert_eq!(ticks, ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]);
        let hourly = Cron::new("0 * * * *", "Europe/Berlin")?;
        let ticks = day_of(&hourly, "2026-10-24T23:30:00Z", "2026-10-25T02:30:00Z");
        assert_eq!(
            ticks,
            ["2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"],
            "02:00 CEST, 02:00 CET, 03:00 CET"
        );
        Ok(())
    }

    #[test]
    fn new_york_transitions() -> Result<()> {
        // 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
        let daily = Cron::new("30 2 * * *", "America/New_York")?;
        let spring = day_of(&daily, "2026-03-07T00:00:00Z", "2026-03-09T23:59:00Z");
        assert_eq!(spring, ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]);
        let early = Cron::new("30 1 * * *", "America/New_York")?;
        let fall = day_of(&early, "2026-10-31T00:00:00Z", "2026-11-02T23:59:00Z");
        assert_eq!(fall, ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]);
        Ok(())
    }

    #[test]
    fn a_day_of_minutes_has_1440_ticks_and_latest_at_is_inclusive() -> Result<()> {
        let every = Cron::new("*/1 * * * *", "UTC")?;
        let day = every.ticks_between(at("2026-12-01T00:00:00Z"), at("2026-12-02T00:00:00Z"), 100_000);
        assert_eq!(day.len(), 1_440);
        assert_eq!(every.latest_at(at("2026-12-01T00:05:00Z")), Some(at("2026-12-01T00:05:00Z")));
        assert_eq!(every.next_after(at("2026-12-01T00:05:00Z")), Some(at("2026-12-01T00:06:00Z")));
        let capped = every.ticks_between(at("2026-12-01T00:00:00Z"), at("2026-12-01T01:00:00Z"), 3);
        assert_eq!(
            capped.into_iter().map(rfc3339).collect::<Vec<_>>(),
            ["2026-12-01T00:58:00Z", "2026-12-01T00:59:00Z", "2026-12-01T01:00:00Z"]
        );
        Ok(())
    }
}
