//! Tunables of the runtime, with the defaults a production service wants.

use std::time::Duration;

use crate::Retention;

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
    pub(crate) retention: Retention,
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
            retention: Retention::default(),
        }
    }
}

impl Config {
    pub(crate) fn validate(&self) -> crate::Result<()> {
        use crate::Error;
        if self.concurrency == 0 {
            return Err(Error::invalid("concurrency", "must be at least 1"));
        }
        if self.claim_batch == 0 {
            return Err(Error::invalid("claim batch size", "must be at least 1"));
        }
        if self.lease < Duration::from_millis(100) {
            return Err(Error::invalid("lease", format!("{:?} is shorter than 100ms", self.lease)));
        }
        if self.heartbeat.is_zero() || self.heartbeat * 2 > self.lease {
            return Err(Error::invalid(
                "heartbeat interval",
                format!(
                    "{:?} must be above zero and at most half the lease ({:?}) so a lease is renewed \
                     at least twice before it expires",
                    self.heartbeat, self.lease
                ),
            ));
        }
        if self.max_idle_wait.is_zero() || self.housekeeping.is_zero() {
            return Err(Error::invalid(
                "interval",
                "idle wait and housekeeping intervals must be above zero",
            ));
        }
        if self.reap_batch == 0 || self.trim_batch == 0 {
            return Err(Error::invalid("batch size", "reap and trim batches must be at least 1"));
        }
        Ok(())
    }
}
