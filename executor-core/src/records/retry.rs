//! Retry policies: how long a failed task waits before its next attempt.

use std::{fmt, sync::Arc, time::Duration};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The signature of a custom backoff: the retry number (1 for the first
/// retry) to the delay before it.
pub type BackoffFn = dyn Fn(u32) -> Duration + Send + Sync;

/// How long to wait before each retry. The number of attempts is set apart,
/// by `retry_limit`.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::RetryPolicy;
///
/// let levels = RetryPolicy::levels([Duration::from_secs(10), Duration::from_secs(60)])?;
/// assert_eq!(levels.delay(1), Duration::from_secs(10));
/// assert_eq!(levels.delay(5), Duration::from_secs(60)); // the last level repeats
///
/// let exp = RetryPolicy::exponential(Duration::from_millis(100), 2.0, Duration::from_secs(5))?;
/// assert_eq!(exp.delay(3), Duration::from_millis(400));
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RetryPolicy {
    /// The same interval before every retry (the seed's default).
    Fixed {
        /// The interval, in milliseconds when serialized.
        #[serde(with = "duration_ms")]
        interval: Duration,
    },
    /// `base * factor^(n-1)`, at most `cap`, shortened by up to `jitter`
    /// (a fraction from 0 to 1) at random so retries of many tasks spread out.
    Exponential {
        /// First delay.
        #[serde(with = "duration_ms")]
        base: Duration,
        /// Growth per retry, at least 1.
        factor: f64,
        /// Longest delay.
        #[serde(with = "duration_ms")]
        cap: Duration,
        /// Fraction of the delay removed at random, 0 to 1.
        jitter: f64,
    },
    /// Explicit delays, one per retry; the last repeats (e.g. 10s, 1m, 10m, 1h).
    Levels {
        /// The delays, at least one.
        #[serde(with = "duration_ms_vec")]
        levels: Vec<Duration>,
    },
    /// A function of the retry number. Code, not data: set it as a handler's
    /// default; it cannot be stored with a single submit.
    #[serde(skip)]
    Custom(CustomBackoff),
}

/// A named custom backoff function, see [`RetryPolicy::custom`].
#[derive(Clone)]
pub struct CustomBackoff {
    name: &'static str,
    f: Arc<BackoffFn>,
}

impl fmt::Debug for CustomBackoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomBackoff({})", self.name)
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed { interval } => write!(f, "Fixed({interval:?})"),
            Self::Exponential { base, factor, cap, jitter } => {
                write!(f, "Exponential(base={base:?}, factor={factor}, cap={cap:?}, jitter={jitter})")
            }
            Self::Levels { levels } => write!(f, "Levels({levels:?})"),
            Self::Custom(c) => c.fmt(f),
        }
    }
}

impl PartialEq for RetryPolicy {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Fixed { interval: a }, Self::Fixed { interval: b }) => a == b,
            (
                Self::Exponential { base: a, factor: b, cap: c, jitter: d },
                Self::Exponential { base: e, factor: f, cap: g, jitter: h },
            ) => a == e && b == f && c == g && d == h,
            (Self::Levels { levels: a }, Self::Levels { levels: b }) => a == b,
            (Self::Custom(a), Self::Custom(b)) => Arc::ptr_eq(&a.f, &b.f),
            _ => false,
        }
    }
}

impl Default for RetryPolicy {
    /// Fixed, one second.
    fn default() -> Self {
        Self::Fixed { interval: Duration::from_secs(1) }
    }
}

impl RetryPolicy {
    /// The same interval before every retry.
    pub const fn fixed(interval: Duration) -> Self {
        Self::Fixed { interval }
    }

    /// Exponential backoff without jitter.
    ///
    /// # Errors
    /// [`Error::Invalid`] if `factor` is below 1 or not finite, or `cap < base`.
    pub fn exponential(base: Duration, factor: f64, cap: Duration) -> Result<Self> {
        let policy = Self::Exponential { base, factor, cap, jitter: 0.0 };
        policy.validate()?;
        Ok(policy)
    }

    /// Sets the jitter fraction of an exponential policy (0 to 1); other
    /// policies are returned unchanged.
    ///
    /// # Errors
    /// [`Error::Invalid`] if `jitter` is outside 0..=1.
    pub fn with_jitter(self, jitter: f64) -> Result<Self> {
        match self {
            Self::Exponential { base, factor, cap, .. } => {
                let policy = Self::Exponential { base, factor, cap, jitter };
                policy.validate()?;
                Ok(policy)
            }
            other => Ok(other),
        }
    }

    /// Explicit levels, one per retry; the last repeats.
    ///
    /// # Errors
    /// [`Error::Invalid`] if `levels` is empty.
    pub fn levels(levels: impl IntoIterator<Item = Duration>) -> Result<Self> {
        let policy = Self::Levels { levels: levels.into_iter().collect() };
        policy.validate()?;
        Ok(policy)
    }

    /// A custom function of the retry number (1 for the first retry).
    pub fn custom(name: &'static str, f: impl Fn(u32) -> Duration + Send + Sync + 'static) -> Self {
        Self::Custom(CustomBackoff { name, f: Arc::new(f) })
    }

    /// Checks the policy's parameters.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the bad parameter.
    pub fn validate(&self) -> Result<()> {
        match self {
            Self::Custom(_) => Ok(()),
            Self::Fixed { interval } => crate::time::check_duration("retry interval", *interval),
            Self::Exponential { base, factor, cap, jitter } => {
                crate::time::check_duration("retry cap", *cap)?;
                if !factor.is_finite() || *factor < 1.0 {
                    return Err(Error::invalid(
                        "retry policy",
                        format!("exponential factor {factor} must be a finite number >= 1"),
                    ));
                }
                if cap < base {
                    return Err(Error::invalid(
                        "retry policy",
                        format!("cap {cap:?} is shorter than base {base:?}"),
                    ));
                }
                if !(0.0..=1.0).contains(jitter) {
                    return Err(Error::invalid(
                        "retry policy",
                        format!("jitter {jitter} must be between 0 and 1"),
                    ));
                }
                Ok(())
            }
            Self::Levels { levels } if levels.is_empty() => {
                Err(Error::invalid("retry policy", "levels must name at least one delay"))
            }
            Self::Levels { levels } => {
                levels.iter().try_for_each(|d| crate::time::check_duration("retry level", *d))
            }
        }
    }

    /// The delay before retry number `retry` (1 for the first retry, 0 is
    /// treated as 1).
    pub fn delay(&self, retry: u32) -> Duration {
        let retry = retry.max(1);
        match self {
            Self::Fixed { interval } => *interval,
            Self::Exponential { base, factor, cap, jitter } => {
                let exp = i32::try_from(retry - 1).unwrap_or(i32::MAX);
                let raw = base.as_secs_f64() * factor.powi(exp);
                let capped = if raw.is_finite() { raw.min(cap.as_secs_f64()) } else { cap.as_secs_f64() };
                let cut = if *jitter > 0.0 { jitter * rand::random::<f64>() } else { 0.0 };
                Duration::try_from_secs_f64(capped * (1.0 - cut)).unwrap_or(*cap).min(*cap)
            }
            Self::Levels { levels } => {
                let i = usize::try_from(retry - 1).unwrap_or(usize::MAX).min(levels.len().saturating_sub(1));
                levels.get(i).copied().unwrap_or_default()
            }
            Self::Custom(c) => (c.f)(retry),
        }
    }

    /// Whether this policy can be stored with a task (everything but custom).
    pub fn is_storable(&self) -> bool {
        !matches!(self, Self::Custom(_))
    }
}

/// Parses durations written like `"500ms"`, `"2s"`, `"1m"`, `"1h"`, `"1d"`
/// (a whole number and a unit).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(reliable_executor::retry::parse_duration("2s")?, Duration::from_secs(2));
/// assert!(reliable_executor::retry::parse_duration("2 parsecs").is_err());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
///
/// # Errors
/// [`Error::Invalid`] with the accepted forms.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let bad = || {
        Error::invalid(
            "duration",
            format!("`{text}` is not a duration; write a whole number and a unit: 500ms, 2s, 1m, 1h, 1d"),
        )
    };
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (num, unit) = text.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let ms_per = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(ms_per).map(Duration::from_millis).ok_or_else(bad)
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(crate::time::millis(*d))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

mod duration_ms_vec {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer, ser::SerializeSeq};

    pub(super) fn serialize<S: Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for d in v {
            seq.serialize_element(&crate::time::millis(*d))?;
        }
        seq.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        Vec::<u64>::deserialize(d).map(|v| v.into_iter().map(Duration::from_millis).collect())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn exponential_stays_within_bounds(
            base_ms in 1u64..10_000,
            factor in 1.0f64..10.0,
            extra_cap_ms in 0u64..1_000_000,
            jitter in 0.0f64..=1.0,
            retry in 0u32..200,
        ) {
            let base = Duration::from_millis(base_ms);
            let cap = Duration::from_millis(base_ms + extra_cap_ms);
            let p = RetryPolicy::exponential(base, factor, cap)?.with_jitter(jitter)?;
            let d = p.delay(retry);
            prop_assert!(d <= cap);
            let exact = RetryPolicy::exponential(base, factor, cap)?.delay(retry);
            prop_assert!(d <= exact);
            let floor = exact.as_secs_f64() * (1.0 - jitter);
            prop_assert!(d.as_secs_f64() + 1e-6 >= floor, "{d:?} below {floor}");
        }

        #[test]
        fn exponential_without_jitter_never_shrinks(base_ms in 1u64..5_000, factor in 1.0f64..4.0, retry in 1u32..100) {
            let p = RetryPolicy::exponential(Duration::from_millis(base_ms), factor, Duration::from_secs(3_600))?;
            prop_assert!(p.delay(retry + 1) >= p.delay(retry));
            prop_assert!(p.delay(1) == Duration::from_millis(base_ms));
        }

        #[test]
        fn levels_pick_the_level_or_the_last(levels in proptest::collection::vec(0u64..100_000, 1..8), retry in 1u32..50) {
            let ds: Vec<Duration> = levels.iter().copied().map(Duration::from_millis).collect();
            let p = RetryPolicy::levels(ds.clone())?;
            let i = usize::try_from(retry - 1).unwrap_or(usize::MAX).min(ds.len() - 1);
            prop_assert_eq!(p.delay(retry), ds[i]);
        }

        #[test]
        fn parse_duration_never_panics(s in ".{0,12}") {
            let _ = parse_duration(&s);
        }

        #[test]
        fn parse_duration_round_trips(n in 0u64..1_000_000, unit in prop::sample::select(vec![("ms", 1u64), ("s", 1_000), ("m", 60_000), ("h", 3_600_000)])) {
            prop_assert_eq!(parse_duration(&format!("{n}{}", unit.0))?, Duration::from_millis(n * unit.1));
        }
    }

    #[test]
    fn invalid_policies_are_refused() {
        assert!(RetryPolicy::exponential(Duration::from_secs(2), 0.5, Duration::from_secs(10)).is_err());
        assert!(RetryPolicy::exponential(Duration::from_secs(2), 2.0, Duration::from_secs(1)).is_err());
        assert!(RetryPolicy::levels([]).is_err());
        let exp = RetryPolicy::exponential(Duration::from_secs(1), 2.0, Duration::from_secs(8));
        assert!(exp.and_then(|p| p.with_jitter(1.5)).is_err());
    }

    #[test]
    fn custom_policy_is_called_and_not_storable() {
        let p = RetryPolicy::custom("square", |n| Duration::from_secs(u64::from(n * n)));
        assert_eq!(p.delay(3), Duration::from_secs(9));
        assert!(!p.is_storable());
        assert!(serde_json::to_string(&p).is_err());
    }

    #[test]
    fn storable_policies_round_trip_through_json() -> Result<()> {
        let policies = [
            RetryPolicy::fixed(Duration::from_millis(2_500)),
            RetryPolicy::exponential(Duration::from_secs(1), 2.0, Duration::from_secs(60))?
                .with_jitter(0.25)?,
            RetryPolicy::levels([Duration::from_secs(10), Duration::from_secs(60)])?,
        ];
        for p in policies {
            let json = serde_json::to_string(&p).map_err(Error::Encode)?;
            let back: RetryPolicy = serde_json::from_str(&json).map_err(Error::Encode)?;
            assert_eq!(back, p, "{json}");
        }
        Ok(())
    }
}
