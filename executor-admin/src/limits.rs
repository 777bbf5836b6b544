//! The JSON shapes of a queue's fleet-wide limits: as the queue
//! view shows them and as `PUT /api/queues/{name}/limits` takes them, and
//! the conversion to core's [`QueueLimits`], whose checks are the API's.

use std::time::Duration;

use executor_core::{
    Result,
    queue::{QueueLimits, RateLimit},
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A queue's fleet-wide limits; `null` is no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
pub struct QueueLimitsView {
    /// At most this many of its tasks `RUNNING` at once, across the fleet.
    pub concurrency: Option<u32>,
    /// At most this many starts per interval (a token bucket).
    pub rate: Option<RateLimitView>,
}

/// A rate limit: a bucket of `burst` tokens refilled at `starts` per
/// `per_ms`, on the store's clock; each start costs a token.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
pub struct RateLimitView {
    /// Starts per interval.
    pub starts: u32,
    /// The interval, in milliseconds.
    pub per_ms: u64,
    /// Most starts at once after an idle spell.
    pub burst: u32,
}

impl From<QueueLimits> for QueueLimitsView {
    fn from(limits: QueueLimits) -> Self {
        Self {
            concurrency: limits.concurrency,
            rate: limits.rate.map(|r| RateLimitView {
                starts: r.starts,
                per_ms: u64::try_from(r.per.as_millis()).unwrap_or(u64::MAX),
                burst: r.burst,
            }),
        }
    }
}

/// `PUT /api/queues/{name}/limits`: the queue's limits from now on,
/// replacing the ones it had. A limit left out is removed; `{}` removes
/// both.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueLimitsRequest {
    /// At most this many of its tasks `RUNNING` at once: 1 to 1,000,000.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub concurrency: Option<u32>,
    /// At most `starts` per `per_ms`.
    #[serde(default)]
    pub rate: Option<RateLimitRequest>,
}

/// A rate limit to set.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitRequest {
    /// Starts per interval: 1 to 1,000,000.
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub starts: u32,
    /// The interval in milliseconds: 1 to 86,400,000 (a day).
    #[schema(minimum = 1, maximum = 86_400_000)]
    pub per_ms: u64,
    /// The bucket's size, 1 to 1,000,000; `starts` when left out.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub burst: Option<u32>,
}

impl QueueLimitsRequest {
    /// The limits asked for, checked by core's rules.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming the value and its range.
    pub fn limits(&self) -> Result<QueueLimits> {
        let mut limits = QueueLimits::new();
        if let Some(n) = self.concurrency {
            limits = limits.concurrency(n);
        }
        if let Some(r) = &self.rate {
            let mut rate = RateLimit::new(r.starts, Duration::from_millis(r.per_ms))?;
            if let Some(burst) = r.burst {
                rate = rate.burst(burst)?;
            }
            limits = limits.rate(rate);
        }
        limits.validate()?;
        Ok(limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: &str) -> std::result::Result<QueueLimitsRequest, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn requests_become_core_limits() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let both = request(r#"{"concurrency":4,"rate":{"starts":50,"per_ms":1000}}"#)?.limits()?;
        assert_eq!(both, QueueLimits::new().concurrency(4).rate(RateLimit::per_second(50)?));
        let burst = request(r#"{"rate":{"starts":600,"per_ms":60000,"burst":10}}"#)?.limits()?;
        assert_eq!(burst.rate, Some(RateLimit::new(600, Duration::from_secs(60))?.burst(10)?));
        assert!(request("{}")?.limits()?.is_none());
        let view = QueueLimitsView::from(burst);
        assert_eq!(view.rate, Some(RateLimitView { starts: 600, per_ms: 60_000, burst: 10 }));
        for bad in [
            r#"{"concurrency":0}"#,
            r#"{"concurrency":1000001}"#,
            r#"{"rate":{"starts":0,"per_ms":1000}}"#,
            r#"{"rate":{"starts":5,"per_ms":0}}"#,
            r#"{"rate":{"starts":5,"per_ms":86400001}}"#,
            r#"{"rate":{"starts":5,"per_ms":1000,"burst":0}}"#,
        ] {
            assert!(request(bad)?.limits().is_err(), "{bad}");
        }
        assert!(request(r#"{"concurrency":4,"extra":1}"#).is_err());
        Ok(())
    }
}
