//! Named queues and priorities: which queue a task waits in, the
//! order within a queue, and how an executor shares its claims among the
//! queues it serves.
//!
//! A task belongs to one queue ([`DEFAULT_QUEUE`] unless its handler's
//! attribute or its submit names another) and has a priority from 0 to
//! [`MAX_PRIORITY`]. Within a queue, due tasks are claimed highest priority
//! first, then earliest due, then (same due millisecond) by id, which is
//! submission order for generated (UUID v7) ids. An executor serves a
//! [`QueueSet`]: weighted (claims shared in proportion to the weights while
//! every queue has work) or strict (a queue is claimed from only when the
//! ones before it have no due task). Pausing a queue ([`crate::Client::pause_queue`])
//! stops its claims on every process; its tasks wait, in order.

use std::{fmt, time::Duration};

use serde::{Deserialize, Serialize};

use crate::{Error, Result, Timestamp};

/// The queue of a task whose handler and submit name none.
pub const DEFAULT_QUEUE: &str = "default";

/// The highest priority. Priorities run from 0 (the default, claimed last)
/// to 9 (claimed first) within a queue; priorities never order tasks of
/// different queues (weights and strict order do that).
pub const MAX_PRIORITY: u8 = 9;

/// Longest queue name, in bytes.
pub const MAX_QUEUE_LEN: usize = 64;

/// Most queues one executor serves (each is a step of every claim).
pub const MAX_QUEUES: usize = 64;

/// Largest weight of a queue in a weighted [`QueueSet`].
pub const MAX_WEIGHT: u32 = 1_000;

/// A queue's name: 1 to 64 bytes of ASCII letters, digits, `-`, `_`, `.`
/// or `:`.
///
/// ```
/// use reliable_executor::QueueName;
///
/// assert_eq!(QueueName::new("emails")?.as_str(), "emails");
/// assert_eq!(QueueName::default().as_str(), "default");
/// assert!(QueueName::new("e mails").is_err());
/// assert!(QueueName::new("").is_err());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QueueName(String);

impl QueueName {
    /// Validates a queue name.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty or too long name or a character other
    /// than ASCII letters, digits, `-`, `_`, `.` or `:`.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        if name.is_empty() || name.len() > MAX_QUEUE_LEN {
            return Err(Error::invalid("queue", format!("`{name}` must be 1 to {MAX_QUEUE_LEN} bytes long")));
        }
        if let Some(c) =
            name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
        {
            return Err(Error::invalid(
                "queue",
                format!("`{name}` contains {c:?}; use letters, digits, `-`, `_`, `.` or `:`"),
            ));
        }
        Ok(Self(name))
    }

    /// The queue as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is [`DEFAULT_QUEUE`].
    pub fn is_default(&self) -> bool {
        self.0 == DEFAULT_QUEUE
    }
}

impl Default for QueueName {
    fn default() -> Self {
        Self(DEFAULT_QUEUE.to_owned())
    }
}

impl TryFrom<String> for QueueName {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        Self::new(s)
    }
}

impl TryFrom<&str> for QueueName {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

impl From<QueueName> for String {
    fn from(q: QueueName) -> Self {
        q.0
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Checks a priority.
///
/// # Errors
/// [`Error::Invalid`] above [`MAX_PRIORITY`].
pub fn check_priority(priority: u8) -> Result<()> {
    if priority > MAX_PRIORITY {
        return Err(Error::invalid("priority", format!("{priority} is outside 0..={MAX_PRIORITY}")));
    }
    Ok(())
}

/// One queue's part of a [`ClaimPlan`]: up to `quota` tasks are taken from
/// it before any queue's remainder is filled.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueShare {
    /// The queue.
    pub queue: QueueName,
    /// How many of the batch this queue gets first, if it has them.
    pub quota: usize,
}

impl QueueShare {
    /// A share of `quota` tasks from `queue`.
    pub fn new(queue: QueueName, quota: usize) -> Self {
        Self { queue, quota }
    }
}

/// What one claim takes, and from where: the store claims up to `quota`
/// due tasks from each share's queue, in the order given, then fills what
/// is left of `limit` from the same queues again in the same order, all in
/// one atomic step. Paused queues give nothing. Within a queue: highest
/// priority first, then earliest due, then id.
///
/// ```
/// use reliable_executor::{QueueName, queue::ClaimPlan};
///
/// let plan = ClaimPlan::single(QueueName::default(), 10);
/// assert_eq!(plan.limit, 10);
/// assert_eq!(plan.shares.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimPlan {
    /// The queues in the order they are claimed from.
    pub shares: Vec<QueueShare>,
    /// Most tasks the claim takes in all.
    pub limit: usize,
}

impl ClaimPlan {
    /// A plan over `shares` taking at most `limit` tasks.
    pub fn new(shares: Vec<QueueShare>, limit: usize) -> Self {
        Self { shares, limit }
    }

    /// Up to `limit` tasks from `queue` alone.
    pub fn single(queue: QueueName, limit: usize) -> Self {
        Self { shares: vec![QueueShare::new(queue, limit)], limit }
    }

    /// Up to `limit` tasks from the default queue alone, where a task
    /// submitted without a queue goes: `ClaimPlan::single(QueueName::default(),
    /// limit)`.
    ///
    /// ```
    /// use reliable_executor::{QueueName, queue::ClaimPlan};
    ///
    /// assert_eq!(ClaimPlan::default_queue(10), ClaimPlan::single(QueueName::default(), 10));
    /// ```
    pub fn default_queue(limit: usize) -> Self {
        Self::single(QueueName::default(), limit)
    }

    /// Whether the plan claims from the default queue only (as
    /// [`ClaimPlan::default_queue`] does).
    pub fn is_default_only(&self) -> bool {
        self.shares.iter().all(|s| s.queue.is_default())
    }
}

/// How an executor shares its claims among the queues it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Order {
    /// In proportion to the weights (smooth weighted round robin).
    Weighted,
    /// Each queue only when the ones before it have nothing due.
    Strict,
}

/// The queues an executor serves and how its claims are shared among them.
/// Built by [`crate::ExecutorBuilder::queues`] (weighted) or
/// [`crate::ExecutorBuilder::strict_queues`] (strict order).
///
/// Weighted: every claim's batch is split by smooth weighted round robin
/// (the algorithm nginx uses for upstreams), so over many claims each queue
/// gets `weight / sum of weights` of the claims while every queue has due
/// work, and none starves: a queue of weight 1 beside one of weight 1,000
/// still gets one claim in 1,001. A queue without due work gives its slots
/// to the others in the same claim, so no capacity idles.
///
/// ```
/// use reliable_executor::queue::QueueSet;
///
/// let mut set = QueueSet::weighted([("critical", 6), ("default", 3), ("low", 1)])?;
/// let mut got = std::collections::HashMap::new();
/// for _ in 0..100 {
///     for share in set.plan(10).shares {
///         *got.entry(share.queue.to_string()).or_insert(0) += share.quota;
///     }
/// }
/// assert_eq!(got["critical"], 600);
/// assert_eq!(got["default"], 300);
/// assert_eq!(got["low"], 100);
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct QueueSet {
    queues: Vec<(QueueName, u32)>,
    order: Order,
    /// Smooth weighted round robin: each queue's current weight.
    current: Vec<i64>,
}

impl QueueSet {
    /// Serves the default queue alone.
    pub fn default_only() -> Self {
        Self { queues: vec![(QueueName::default(), 1)], order: Order::Strict, current: vec![0] }
    }

    /// Weighted queues.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad or repeated name, a weight outside
    /// 1..=[`MAX_WEIGHT`], no queue at all, or more than [`MAX_QUEUES`].
    pub fn weighted<Q>(queues: impl IntoIterator<Item = (Q, u32)>) -> Result<Self>
    where
        Q: TryInto<QueueName>,
        Error: From<Q::Error>,
    {
        let mut out = Vec::new();
        for (q, w) in queues {
            let q: QueueName = q.try_into()?;
            if w == 0 || w > MAX_WEIGHT {
                return Err(Error::invalid(
                    "queue weight",
                    format!("{w} for `{q}` is outside 1..={MAX_WEIGHT}"),
                ));
            }
            out.push((q, w));
        }
        Self::checked(out, Order::Weighted)
    }

    /// Strict order: a claim takes from the first queue while it has due
    /// tasks, from the second only when the first has none, and so on.
    ///
    /// # Errors
    /// As [`QueueSet::weighted`].
    pub fn strict<Q>(queues: impl IntoIterator<Item = Q>) -> Result<Self>
    where
        Q: TryInto<QueueName>,
        Error: From<Q::Error>,
    {
        let mut out = Vec::new();
        for q in queues {
            out.push((q.try_into()?, 1));
        }
        Self::checked(out, Order::Strict)
    }

    fn checked(queues: Vec<(QueueName, u32)>, order: Order) -> Result<Self> {
        if queues.is_empty() {
            return Err(Error::invalid("queues", "name at least one queue"));
        }
        if queues.len() > MAX_QUEUES {
            return Err(Error::invalid("queues", format!("{} queues; at most {MAX_QUEUES}", queues.len())));
        }
        for (i, (q, _)) in queues.iter().enumerate() {
            if queues[..i].iter().any(|(p, _)| p == q) {
                return Err(Error::invalid("queues", format!("`{q}` is named twice")));
            }
        }
        let current = vec![0; queues.len()];
        Ok(Self { queues, order, current })
    }

    /// Adds `queue` with weight 1 at the end, unless it is served already.
    pub(crate) fn ensure(&mut self, queue: &QueueName) {
        if self.queues.len() < MAX_QUEUES && !self.queues.iter().any(|(q, _)| q == queue) {
            self.queues.push((queue.clone(), 1));
            self.current.push(0);
        }
    }

    /// The queues served, with their weights (1 each in strict order), in
    /// the order given.
    pub fn queues(&self) -> impl Iterator<Item = (&QueueName, u32)> {
        self.queues.iter().map(|(q, w)| (q, *w))
    }

    /// Whether the order is strict.
    pub fn is_strict(&self) -> bool {
        self.order == Order::Strict
    }

    /// Whether `queue` is served.
    pub fn serves(&self, queue: &QueueName) -> bool {
        self.queues.iter().any(|(q, _)| q == queue)
    }

    /// The plan of the next claim of up to `limit` tasks. Weighted: the
    /// slots are dealt by smooth weighted round robin (state kept between
    /// calls), and the queues are ordered by their share, largest first, so
    /// the fill of slots a queue could not use also follows the weights.
    /// Strict: every quota is zero and the fill goes in the given order.
    pub fn plan(&mut self, limit: usize) -> ClaimPlan {
        if self.order == Order::Strict || self.queues.len() == 1 {
            let shares = self.queues.iter().map(|(q, _)| QueueShare::new(q.clone(), 0)).collect();
            return ClaimPlan::new(shares, limit);
        }
        let total: i64 = self.queues.iter().map(|(_, w)| i64::from(*w)).sum();
        let mut quota = vec![0usize; self.queues.len()];
        for _ in 0..limit {
            let mut best = 0;
            for (i, (_, w)) in self.queues.iter().enumerate() {
                self.current[i] += i64::from(*w);
                if self.current[i] > self.current[best] {
                    best = i;
                }
            }
            self.current[best] -= total;
            quota[best] += 1;
        }
        let mut idx: Vec<usize> = (0..self.queues.len()).collect();
        // Largest quota first; among equals, the one furthest behind.
        idx.sort_by(|a, b| quota[*b].cmp(&quota[*a]).then(self.current[*b].cmp(&self.current[*a])));
        let shares = idx.into_iter().map(|i| QueueShare::new(self.queues[i].0.clone(), quota[i])).collect();
        ClaimPlan::new(shares, limit)
    }
}

/// Longest interval of a [`RateLimit`]: one day.
pub const MAX_RATE_PER: Duration = Duration::from_secs(86_400);

/// Most starts a [`RateLimit`] allows per interval, and its largest burst.
pub const MAX_RATE_STARTS: u32 = 1_000_000;

/// A fleet-wide rate limit of one queue: a token bucket of `burst` tokens
/// that refills at `starts` per `per`, continuously, on the store's clock.
/// Each task a claim takes from the queue costs one token; a claim takes no
/// more tasks than whole tokens are left. So over any long interval the
/// queue starts `starts / per` tasks (within a token), and never more than
/// `burst` at once after an idle spell. Token bucket rather than sliding
/// window: it keeps one number and one time per queue, and a full bucket
/// lets a queue that was idle catch up at once by at most `burst`.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::queue::RateLimit;
///
/// let fifty = RateLimit::per_second(50)?;
/// assert_eq!((fifty.starts, fifty.per, fifty.burst), (50, Duration::from_secs(1), 50));
/// let smooth = RateLimit::new(600, Duration::from_secs(60))?.burst(1)?;
/// assert_eq!(smooth.burst, 1);
/// assert!(RateLimit::per_second(0).is_err());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RateLimit {
    /// Tasks started per `per`.
    pub starts: u32,
    /// The interval, in milliseconds when serialized.
    #[serde(with = "duration_ms")]
    pub per: Duration,
    /// The bucket's size: most tasks started at once after an idle spell.
    pub burst: u32,
}

impl RateLimit {
    /// `starts` per `per`, with a burst of `starts`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for `starts` outside 1..=1,000,000 or `per`
    /// outside 1 ms..=1 day.
    pub fn new(starts: u32, per: Duration) -> Result<Self> {
        let r = Self { starts, per, burst: starts };
        r.validate()?;
        Ok(r)
    }

    /// `starts` per second, with a burst of `starts`.
    ///
    /// # Errors
    /// As [`RateLimit::new`].
    pub fn per_second(starts: u32) -> Result<Self> {
        Self::new(starts, Duration::from_secs(1))
    }

    /// Sets the bucket's size.
    ///
    /// # Errors
    /// [`Error::Invalid`] outside 1..=1,000,000.
    pub fn burst(mut self, burst: u32) -> Result<Self> {
        self.burst = burst;
        self.validate()?;
        Ok(self)
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field and its range.
    pub fn validate(&self) -> Result<()> {
        if self.starts == 0 || self.starts > MAX_RATE_STARTS {
            return Err(Error::invalid(
                "rate starts",
                format!("{} is outside 1..={MAX_RATE_STARTS}", self.starts),
            ));
        }
        if self.burst == 0 || self.burst > MAX_RATE_STARTS {
            return Err(Error::invalid(
                "rate burst",
                format!("{} is outside 1..={MAX_RATE_STARTS}", self.burst),
            ));
        }
        if self.per < Duration::from_millis(1) || self.per > MAX_RATE_PER {
            return Err(Error::invalid("rate interval", format!("{:?} is outside 1ms..=1 day", self.per)));
        }
        Ok(())
    }

    /// Tokens the bucket gains in `elapsed`.
    pub fn refill(&self, elapsed: Duration) -> f64 {
        elapsed.as_secs_f64() * f64::from(self.starts) / self.per.as_secs_f64()
    }

    /// For stores that keep the bucket as numbers: the bucket as of
    /// `now_ms` (the store's clock, epoch ms), from `tokens` stored as of
    /// `tokens_at_ms`. The stored tokens are brought into `0..=burst` first
    /// (a hand-edited value can neither lend nor hoard; not a number counts
    /// as empty), then what was earned since is added, capped at the burst.
    /// A `tokens_at_ms` ahead of `now_ms` earns nothing, so it cannot stall
    /// the bucket.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reliable_executor::queue::RateLimit;
    ///
    /// let rate = RateLimit::new(20, Duration::from_secs(1))?.burst(10)?;
    /// assert_eq!(rate.bucket_at(0.0, 1_000, 1_100), 2.0);
    /// assert_eq!(rate.bucket_at(9.5, 1_000, 61_000), 10.0);
    /// assert_eq!(rate.bucket_at(f64::NAN, 1_000, 1_000), 0.0);
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    pub fn bucket_at(&self, tokens: f64, tokens_at_ms: i64, now_ms: i64) -> f64 {
        let burst = f64::from(self.burst);
        let held = if tokens.is_finite() { tokens.clamp(0.0, burst) } else { 0.0 };
        let elapsed = Duration::from_millis(u64::try_from(now_ms.saturating_sub(tokens_at_ms)).unwrap_or(0));
        (held + self.refill(elapsed)).min(burst)
    }
}

/// Most attempts of one queue running at once across the fleet.
pub const MAX_CONCURRENCY_LIMIT: u32 = 1_000_000;

/// A queue's fleet-wide limits, kept in the store and enforced inside the
/// claim, atomically: set them with [`crate::Client::set_queue_limits`].
/// `None` is no limit; the default is none at all.
///
/// ```
/// use reliable_executor::queue::{QueueLimits, RateLimit};
///
/// let limits = QueueLimits::new().concurrency(4).rate(RateLimit::per_second(50)?);
/// assert!(limits.validate().is_ok());
/// assert!(QueueLimits::new().concurrency(0).validate().is_err());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QueueLimits {
    /// At most this many tasks of the queue `RUNNING` at once, counted in
    /// the store: a crashed worker's tasks count until the reaper moves
    /// them (one lease later).
    pub concurrency: Option<u32>,
    /// At most this many starts per interval.
    pub rate: Option<RateLimit>,
}

impl QueueLimits {
    /// For stores that keep the limits as columns (`NULL` for none): the
    /// limits, or why the stored values are not limits (a hand-edited row:
    /// a concurrency of 0, a rate with a missing or out-of-range field). A
    /// store fails closed on the reason: the queue is not claimed until its
    /// limits are set again.
    ///
    /// ```
    /// use reliable_executor::queue::QueueLimits;
    ///
    /// let limits = QueueLimits::from_columns(Some(4), Some(50), Some(1_000), Some(50));
    /// assert_eq!(limits.map(|l| l.concurrency), Ok(Some(4)));
    /// assert!(QueueLimits::from_columns(None, Some(50), None, Some(50)).is_err());
    /// assert!(QueueLimits::from_columns(Some(0), None, None, None).is_err());
    /// ```
    ///
    /// # Errors
    /// The reason, as text for the store's log.
    pub fn from_columns(
        concurrency: Option<u32>,
        rate_starts: Option<u32>,
        rate_per_ms: Option<u64>,
        rate_burst: Option<u32>,
    ) -> std::result::Result<Self, String> {
        let mut limits = Self::new();
        if let Some(n) = concurrency {
            if n == 0 || n > MAX_CONCURRENCY_LIMIT {
                return Err(format!("concurrency {n} is outside 1..={MAX_CONCURRENCY_LIMIT}"));
            }
            limits = limits.concurrency(n);
        }
        match (rate_starts, rate_per_ms, rate_burst) {
            (None, None, None) => {}
            (Some(starts), Some(per), Some(burst)) => {
                let rate = RateLimit::new(starts, Duration::from_millis(per))
                    .and_then(|r| r.burst(burst))
                    .map_err(|e| e.to_string())?;
                limits = limits.rate(rate);
            }
            (s, p, b) => return Err(format!("rate {s:?} per {p:?} ms, burst {b:?}: a field is missing")),
        }
        Ok(limits)
    }

    /// What a store shows of the limits it keeps as columns: the stored
    /// concurrency as it is (a corrupt one included, so an operator sees
    /// it) and the rate if its fields make one.
    pub fn shown_from_columns(
        concurrency: Option<u32>,
        rate_starts: Option<u32>,
        rate_per_ms: Option<u64>,
        rate_burst: Option<u32>,
    ) -> Self {
        let mut limits = Self::new();
        limits.concurrency = concurrency;
        if let (Some(s), Some(p), Some(b)) = (rate_starts, rate_per_ms, rate_burst)
            && let Ok(rate) = RateLimit::new(s, Duration::from_millis(p)).and_then(|r| r.burst(b))
        {
            limits.rate = Some(rate);
        }
        limits
    }

    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the concurrency limit.
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// Sets the rate limit.
    pub fn rate(mut self, rate: RateLimit) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Whether no limit is set.
    pub fn is_none(&self) -> bool {
        self.concurrency.is_none() && self.rate.is_none()
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a concurrency outside 1..=1,000,000 or a bad
    /// rate.
    pub fn validate(&self) -> Result<()> {
        if let Some(n) = self.concurrency
            && (n == 0 || n > MAX_CONCURRENCY_LIMIT)
        {
            return Err(Error::invalid(
                "concurrency limit",
                format!("{n} is outside 1..={MAX_CONCURRENCY_LIMIT}; pause the queue to stop it"),
            ));
        }
        if let Some(r) = &self.rate {
            r.validate()?;
        }
        Ok(())
    }
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

/// One queue of a namespace as an operator sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QueueInfo {
    /// The queue.
    pub queue: QueueName,
    /// Tasks waiting in it (`CREATED` or `PENDING`), due or not.
    pub waiting: u64,
    /// Of those, the ones due now.
    pub due: u64,
    /// The due time of its earliest waiting task that is due: how long the
    /// queue's oldest due task has waited is the store's now minus this
    /// (Sidekiq's "latency").
    pub oldest_due: Option<Timestamp>,
    /// Whether it is paused fleet-wide.
    pub paused: bool,
    /// Its tasks `RUNNING` now, across the fleet.
    #[serde(default)]
    pub running: u64,
    /// Its fleet-wide limits.
    #[serde(default)]
    pub limits: QueueLimits,
    /// Claims that a limit cut short while the queue had more due tasks,
    /// counted by the store since the queue's limits were first set (a
    /// running total across the fleet).
    #[serde(default)]
    pub throttled: u64,
}

impl QueueInfo {
    /// An empty, unpaused, unlimited queue.
    pub fn new(queue: QueueName) -> Self {
        Self {
            queue,
            waiting: 0,
            due: 0,
            oldest_due: None,
            paused: false,
            running: 0,
            limits: QueueLimits::new(),
            throttled: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_bucket_refills_to_its_burst_and_ignores_garbage() {
        let rate = RateLimit::new(20, Duration::from_secs(1))
            .and_then(|r| r.burst(10))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!((rate.bucket_at(0.0, 1_000, 1_100) - 2.0).abs() < 1e-9);
        assert!((rate.bucket_at(9.5, 1_000, 61_000) - 10.0).abs() < 1e-9);
        assert!((rate.bucket_at(-5.0, 1_000, 1_000)).abs() < 1e-9);
        assert!((rate.bucket_at(1e300, 1_000, 1_000) - 10.0).abs() < 1e-9);
        assert!((rate.bucket_at(f64::NAN, 1_000, 1_000)).abs() < 1e-9);
        assert!((rate.bucket_at(3.0, i64::MAX, 0) - 3.0).abs() < 1e-9, "a time ahead earns nothing");
        assert!((rate.bucket_at(0.0, i64::MIN, i64::MAX) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn stored_columns_are_limits_or_a_reason() {
        assert_eq!(QueueLimits::from_columns(None, None, None, None), Ok(QueueLimits::new()));
        for bad in [
            (Some(0), None, None, None),
            (Some(MAX_CONCURRENCY_LIMIT + 1), None, None, None),
            (None, Some(5), Some(1_000), None),
            (None, Some(0), Some(1_000), Some(1)),
            (None, Some(5), Some(0), Some(5)),
        ] {
            assert!(QueueLimits::from_columns(bad.0, bad.1, bad.2, bad.3).is_err(), "{bad:?}");
        }
        let shown = QueueLimits::shown_from_columns(Some(0), Some(5), None, Some(5));
        assert_eq!((shown.concurrency, shown.rate), (Some(0), None), "corrupt concurrency shown as stored");
    }

    fn totals(set: &mut QueueSet, claims: usize, limit: usize) -> Vec<usize> {
        let names: Vec<QueueName> = set.queues().map(|(q, _)| q.clone()).collect();
        let mut got = vec![0; names.len()];
        for _ in 0..claims {
            let plan = set.plan(limit);
            assert_eq!(plan.shares.iter().map(|s| s.quota).sum::<usize>(), limit);
            for s in plan.shares {
                if let Some(i) = names.iter().position(|q| *q == s.queue) {
                    got[i] += s.quota;
                }
            }
        }
        got
    }

    #[test]
    fn weights_hold_for_any_batch_size() -> Result<()> {
        for limit in [1, 2, 3, 7, 64] {
            let mut set = QueueSet::weighted([("a", 6), ("b", 3), ("c", 1)])?;
            let got = totals(&mut set, 1000, limit);
            let all = (1000 * limit) as f64;
            for (g, w) in got.iter().zip([0.6, 0.3, 0.1]) {
                assert!((*g as f64 / all - w).abs() < 0.01, "limit {limit}: {got:?}");
            }
        }
        Ok(())
    }

    #[test]
    fn no_queue_starves() -> Result<()> {
        let mut set = QueueSet::weighted([("big", 1000), ("small", 1)])?;
        let got = totals(&mut set, 1001, 1);
        assert_eq!(got, vec![1000, 1]);
        Ok(())
    }

    #[test]
    fn strict_has_no_quotas() -> Result<()> {
        let mut set = QueueSet::strict(["a", "b"])?;
        let plan = set.plan(5);
        assert!(plan.shares.iter().all(|s| s.quota == 0));
        assert_eq!(plan.shares[0].queue.as_str(), "a");
        assert!(set.is_strict());
        Ok(())
    }

    #[test]
    fn bad_sets_are_refused() {
        assert!(QueueSet::weighted([("a", 0)]).is_err());
        assert!(QueueSet::weighted([("a", MAX_WEIGHT + 1)]).is_err());
        assert!(QueueSet::weighted::<&str>([]).is_err());
        assert!(QueueSet::strict(["a", "a"]).is_err());
        assert!(QueueSet::strict(["a b"]).is_err());
        assert!(check_priority(MAX_PRIORITY + 1).is_err());
        assert!(check_priority(MAX_PRIORITY).is_ok());
    }
}
