//! Queue controls: pausing a queue (`pause.lua`: `SADD`/`SREM`
//! of each partition's `paused` SET), its fleet-wide limits (`limits.lua`,
//! in partition 0's slot; `limits_tidy.lua` at housekeeping) and the
//! operator's view of the queues (`queues.lua` in every partition, added up
//! here).

use executor_core::storage::QueueControl;
use std::{collections::BTreeMap, time::Duration};

use executor_core::{
    Error, Namespace, QueueName, Result, Timestamp,
    queue::{QueueInfo, QueueLimits, RateLimit},
};
use fred::{
    interfaces::{ClientLike, SortedSetsInterface},
    types::Value,
};

use crate::{
    RedisStorage,
    error::{shape, storage},
    record::{array, text},
};

impl RedisStorage {
    /// Runs `limits.lua` or `limits_tidy.lua`: partition 0's script keys,
    /// then the other partitions' lease ZSETs (one server, no slot check).
    pub(crate) async fn run_limits(
        &self,
        lua: &crate::scripts::Lua,
        ns: &Namespace,
        args: Vec<Value>,
    ) -> Result<Value> {
        let first = self.keys(ns, 0);
        let mut keys = first.script_keys.to_vec();
        keys.extend((1..self.partitions()).map(|p| self.keys(ns, p).lease().to_owned()));
        let mut all = vec![Value::from(first.base.as_str()), self.inline_wake()];
        all.extend(args);
        self.run(lua, keys, all).await
    }
}

/// A limits field as `limits.lua` writes it: `concurrency,starts,per_ms,burst`,
/// each empty when not set; `None` when it does not parse.
fn parse_limits(spec: &str) -> Option<QueueLimits> {
    let mut parts = spec.split(',');
    let (c, starts, per, burst) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let mut limits = QueueLimits::new();
    if !c.is_empty() {
        limits = limits.concurrency(c.parse().ok()?);
    }
    if !starts.is_empty() {
        let rate = RateLimit::new(starts.parse().ok()?, Duration::from_millis(per.parse().ok()?)).ok()?;
        limits = limits.rate(rate.burst(burst.parse().ok()?).ok()?);
    }
    (!limits.is_none() && limits.validate().is_ok()).then_some(limits)
}

impl QueueControl for RedisStorage {
    /// Writes the pause to every partition: each claim script reads its own
    /// partition's copy, in its own slot, atomically with the claim. A
    /// resume sets the wake marker, so idle claimers look again at once.
    async fn pause_queue(&self, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
        for p in 0..self.partitions() {
            let key = self.keys(ns, p).paused();
            let args = vec![Value::from(if paused { "1" } else { "0" }), Value::from(queue.as_str())];
            self.run(&self.inner.scripts.pause, vec![key], args).await?;
        }
        if !paused {
            let client = self.client()?.with_options(&self.inner.options);
            let _: Value = client
                .zadd(self.inner.layout.wake(ns), None, None, false, false, (0.0, "w"))
                .await
                .map_err(storage)?;
        }
        Ok(())
    }

    /// Sets `queue`'s limits in partition 0's slot, rebuilding its running
    /// set from every partition's leases in the same script. Refused on a
    /// Redis Cluster with several partitions, where one script cannot
    /// reach every partition's slot.
    async fn set_queue_limits(&self, ns: &Namespace, queue: &QueueName, limits: &QueueLimits) -> Result<()> {
        if !self.inner.layout.has_limits() {
            return Err(Error::unsupported(
                "set_queue_limits",
                "queue limits need every partition's scripts to reach partition 0's slot, which a Redis \
                 Cluster with several partitions does not allow; use one partition \
                 (RedisStorageBuilder::partitions(1)) for a namespace with queue limits",
            ));
        }
        limits.validate()?;
        let (starts, per, burst) = match &limits.rate {
            Some(r) => (
                r.starts.to_string(),
                u64::try_from(r.per.as_millis()).unwrap_or(u64::MAX).to_string(),
                r.burst.to_string(),
            ),
            None => (String::new(), String::new(), String::new()),
        };
        let args = vec![
            Value::from(queue.as_str()),
            Value::from(limits.concurrency.map(|c| c.to_string()).unwrap_or_default()),
            Value::from(starts),
            Value::from(per),
            Value::from(burst),
        ];
        self.run_limits(&self.inner.scripts.limits, ns, args).await.map(drop)
    }

    /// Every queue with waiting or running tasks, paused, or with limits,
    /// by name, summed over the partitions; times from the Redis clock.
    async fn queues(&self, ns: &Namespace) -> Result<Vec<QueueInfo>> {
        let mut out = BTreeMap::<String, QueueInfo>::new();
        for p in 0..self.partitions() {
            let first = Value::from(if p == 0 { "1" } else { "0" });
            let reply =
                array(self.run_in(&self.inner.scripts.queues, &self.keys(ns, p), vec![first]).await?)?;
            let Some((limits, reply)) = reply.split_last() else {
                return Err(shape("queues answered nothing"));
            };
            let Some((paused, entries)) = reply.split_last() else {
                return Err(shape("queues answered nothing"));
            };
            for entry in entries.iter().skip(1) {
                let items = array(entry.clone())?;
                let number = |i: usize| items.get(i).and_then(text).and_then(|t| t.parse::<u64>().ok());
                // A registry field that is not a queue name (edited by hand)
                // names no queue anyone can claim from: left out.
                let Some(queue) = items.first().and_then(text).and_then(|q| QueueName::new(q).ok()) else {
                    continue;
                };
                let info = out.entry(queue.to_string()).or_insert_with(|| QueueInfo::new(queue.clone()));
                info.waiting += number(1).unwrap_or(0);
                info.due += number(2).unwrap_or(0);
                if let Some(oldest) = number(3).map(Timestamp::from_millis) {
                    info.oldest_due = Some(info.oldest_due.map_or(oldest, |o| o.min(oldest)));
                }
                info.running += number(4).unwrap_or(0);
            }
            let limits = array(limits.clone())?;
            for entry in limits.chunks(3) {
                let [queue, spec, throttled] = entry else { continue };
                let Some(queue) = text(queue).and_then(|q| QueueName::new(q).ok()) else { continue };
                let spec = text(spec).unwrap_or_default();
                let info = out.entry(queue.to_string()).or_insert_with(|| QueueInfo::new(queue.clone()));
                match parse_limits(&spec) {
                    Some(limits) => info.limits = limits,
                    None => tracing::warn!(
                        queue = %queue, limits = %spec.escape_debug(),
                        "queue limits in Redis do not parse (edited by hand?): the queue is held \
                         until set_queue_limits writes them again"
                    ),
                }
                info.throttled = text(throttled).and_then(|t| t.parse().ok()).unwrap_or(0);
            }
            for queue in array(paused.clone())?.iter().filter_map(text) {
                if let Ok(queue) = QueueName::new(queue) {
                    out.entry(queue.to_string()).or_insert_with(|| QueueInfo::new(queue.clone())).paused =
                        true;
                }
            }
        }
        Ok(out
            .into_values()
            .filter(|q| q.waiting > 0 || q.paused || q.running > 0 || !q.limits.is_none())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_fields_round_trip() -> Result<()> {
        let rate = RateLimit::new(20, Duration::from_secs(1))?.burst(10)?;
        assert_eq!(parse_limits("3,,,"), Some(QueueLimits::new().concurrency(3)));
        assert_eq!(parse_limits(",20,1000,10"), Some(QueueLimits::new().rate(rate)));
        for bad in ["", ",,,", "x,,,", "3,,", "3,,,,", "0,,,", ",20,0,10", "-1,,,"] {
            assert_eq!(parse_limits(bad), None, "{bad}");
        }
        Ok(())
    }
}
