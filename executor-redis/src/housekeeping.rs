//! Housekeeping: handing back expired leases (`reap.lua`) and dropping
//! finished tasks past their retention (`trim.lua`).

use executor_core::{Namespace, Result, query::Retention, storage::Reaped};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::clamped_ms,
    record::{array, ids, log_aside},
};

impl RedisStorage {
    /// The leader's upkeep beside reaping and trimming: `limits_tidy.lua`
    /// makes each limited queue's running set exactly its running tasks
    /// (one EXISTS while no queue has limits).
    pub(crate) async fn housekeeping(&self, ns: &Namespace) -> Result<()> {
        if !self.inner.layout.has_limits() {
            return Ok(());
        }
        let fixed = self.run_limits(&self.inner.scripts.limits_tidy, ns, Vec::new()).await?;
        if let Some(n) = fixed.as_u64().filter(|n| *n > 0) {
            tracing::warn!(namespace = %ns, corrected = n, "queue running sets were out of step; corrected");
        }
        Ok(())
    }

    pub(crate) async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        let mut out = Reaped::default();
        for p in self.rotated_partitions() {
            let left = limit.saturating_sub(out.len());
            if left == 0 {
                break;
            }
            let args = vec![Value::from(crate::args::count(left, crate::claim::MAX_CLAIM))];
            let reply = array(self.run_in(&self.inner.scripts.reap, &self.keys(ns, p), args).await?)?;
            let mut reply = reply.into_iter();
            out.retried.extend(ids(reply.next())?);
            out.failed.extend(ids(reply.next())?);
            out.timed_out.extend(ids(reply.next())?);
            log_aside("reap", reply.next());
        }
        if !out.retried.is_empty() {
            self.poke(ns).await?;
        }
        Ok(out)
    }

    pub(crate) async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        let mut removed = 0u64;
        // A cap by count is shared out evenly over the partitions.
        let parts = u64::from(self.partitions());
        let cap = |max: Option<u64>| max.map(|m| m.div_ceil(parts).to_string()).unwrap_or_default();
        for p in self.rotated_partitions() {
            let left = u64::try_from(limit).unwrap_or(u64::MAX).saturating_sub(removed);
            if left == 0 {
                break;
            }
            // Retention past 1,000 years keeps as much as 1,000 years does.
            let args = vec![
                Value::from(clamped_ms(retention.completed)),
                Value::from(retention.dead_letter.map(clamped_ms).unwrap_or_default()),
                Value::from(left.min(10_000).to_string()),
                Value::from(cap(retention.completed_max)),
                Value::from(cap(retention.dead_letter_max)),
            ];
            let reply = self.run_in(&self.inner.scripts.trim, &self.keys(ns, p), args).await?;
            removed += reply.as_u64().unwrap_or(0);
        }
        Ok(removed)
    }
}
