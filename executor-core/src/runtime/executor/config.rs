//! Tunables of the runtime, with the defaults a production service wants.

use std::time::Duration;

use crate::{query::Retention, queue::QueueSet};

/// Settings of an [`crate::Executor`], set through [`crate::ExecutorBuilder`].
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) concurrency: usize,
    pub(crate) claim_batch: usize,
    pub(crate) lease: Duration,
    pub(crate) heartbeat: Duration,
    pub(crate) max_idle_wait: Duration,
    pub(crate) shutdown_grace: Duration,
    pub(crate) cancel_grace: Duration,
    pub(crate) housekeeping: Duration,
    pub(crate) trim_every: Duration,
    pub(crate) counts_every: Duration,
    pub(crate) reap_batch: usize,
    pub(crate) trim_batch: usize,
    pub(crate) housekeeping_budget: Duration,
    pub(crate) unknown_task_grace: Duration,
    pub(crate) misfire_grace: Duration,
    pub(crate) retention: Retention,
    /// How often finished attempts are added to the store's history;
    /// `None`: history is off.
    pub(crate) history_every: Option<Duration>,
    /// How long the leader keeps history buckets.
    pub(crate) history_keep: Duration,
    /// The queues served; set at build (default: the default queue and
    /// every queue the handlers name).
    pub(crate) queues: QueueSet,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            concurrency: 16,
            claim_batch: 64,
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            max_idle_wait: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(30),
            cancel_grace: Duration::from_secs(5),
            housekeeping: Duration::from_secs(1),
            trim_every: Duration::from_secs(60),
            counts_every: Duration::from_secs(10),
            reap_batch: 256,
            trim_batch: 1_000,
            housekeeping_budget: Duration::from_millis(500),
            unknown_task_grace: Duration::from_secs(3_600),
            misfire_grace: Duration::from_secs(60),
            retention: Retention::default(),
            history_every: Some(Duration::from_secs(5)),
            history_keep: Duration::from_secs(25 * 3_600),
            queues: QueueSet::default_only(),
        }
    }
}

/// The most attempts one process runs at once.
const MAX_CONCURRENCY: usize = 100_000;
/// The largest claim, reap or trim batch.
const MAX_BATCH: usize = 100_000;
/// The longest history a leader keeps: 400 days.
const MAX_HISTORY_KEEP: Duration = Duration::from_secs(400 * 86_400);
/// The longest lease, grace or interval of the runtime: a day.
const MAX_INTERVAL: Duration = Duration::from_secs(86_400);

impl Config {
    /// Checks every setting against its range, naming the option and the
    /// range in the error, so a bad value fails `build` instead of
    /// panicking the runtime later (an `Instant` overflow, a semaphore limit).
    pub(crate) fn validate(&self) -> crate::Result<()> {
        use crate::Error;
        count("concurrency", self.concurrency, MAX_CONCURRENCY)?;
        count("claim_batch", self.claim_batch, MAX_BATCH)?;
        count("reap_batch", self.reap_batch, MAX_BATCH)?;
        count("trim_batch", self.trim_batch, MAX_BATCH)?;
        span("lease", self.lease, Duration::from_millis(100), MAX_INTERVAL)?;
        span("heartbeat_interval", self.heartbeat, Duration::from_millis(1), MAX_INTERVAL)?;
        if self.heartbeat * 2 > self.lease {
            return Err(Error::invalid(
                "heartbeat_interval",
                format!(
                    "{:?} must be at most half the lease ({:?}) so a lease is renewed at least twice \
                     before it expires",
                    self.heartbeat, self.lease
                ),
            ));
        }
        span("max_idle_wait", self.max_idle_wait, Duration::from_millis(1), MAX_INTERVAL)?;
        span("housekeeping_interval", self.housekeeping, Duration::from_millis(1), MAX_INTERVAL)?;
        span("trim_interval", self.trim_every, Duration::from_millis(1), MAX_INTERVAL)?;
        span("unknown_task_grace", self.unknown_task_grace, Duration::ZERO, crate::time::MAX_DURATION)?;
        span("misfire_grace", self.misfire_grace, Duration::ZERO, crate::time::MAX_DURATION)?;
        span(
            "housekeeping_budget",
            self.housekeeping_budget,
            Duration::from_millis(1),
            Duration::from_secs(3_600),
        )?;
        span("counts_interval", self.counts_every, Duration::from_millis(1), MAX_INTERVAL)?;
        span("shutdown_grace", self.shutdown_grace, Duration::ZERO, MAX_INTERVAL)?;
        span("cancel_grace", self.cancel_grace, Duration::ZERO, MAX_INTERVAL)?;
        if let Some(every) = self.history_every {
            span("history_interval", every, Duration::from_millis(1), MAX_INTERVAL)?;
        }
        span("history_keep", self.history_keep, Duration::from_secs(60), MAX_HISTORY_KEEP)?;
        crate::time::check_duration("retention.completed", self.retention.completed)?;
        if let Some(d) = self.retention.dead_letter {
            crate::time::check_duration("retention.dead_letter", d)?;
        }
        Ok(())
    }
}

fn count(what: &'static str, n: usize, max: usize) -> crate::Result<()> {
    if n == 0 || n > max {
        return Err(crate::Error::invalid(what, format!("{n} is outside 1..={max}")));
    }
    Ok(())
}

fn span(what: &'static str, d: Duration, min: Duration, max: Duration) -> crate::Result<()> {
    if d < min || d > max {
        return Err(crate::Error::invalid(what, format!("{d:?} is outside {min:?}..={max:?}")));
    }
    Ok(())
}
