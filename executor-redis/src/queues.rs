//! Queue controls (issue 16): pausing a queue (`pause.lua`: `SADD`/`SREM`
//! of each partition's `paused` SET) and the operator's view of the queues
//! (`queues.lua` in every partition, added up here).

use std::collections::BTreeMap;

use executor_core::{Namespace, QueueInfo, QueueName, Result, Timestamp};
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
    /// Writes the pause to every partition: each claim script reads its own
    /// partition's copy, in its own slot, atomically with the claim. A
    /// resume sets the wake marker, so idle claimers look again at once.
    pub(crate) async fn pause_queue(&self, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
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

    /// Every queue with waiting tasks or paused, by name, summed over the
    /// partitions; times from the Redis clock.
    pub(crate) async fn queues(&self, ns: &Namespace) -> Result<Vec<QueueInfo>> {
        let mut out = BTreeMap::<String, QueueInfo>::new();
        for p in 0..self.partitions() {
            let reply = array(self.run_in(&self.inner.scripts.queues, &self.keys(ns, p), Vec::new()).await?)?;
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
            }
            for queue in array(paused.clone())?.iter().filter_map(text) {
                if let Ok(queue) = QueueName::new(queue) {
                    out.entry(queue.to_string()).or_insert_with(|| QueueInfo::new(queue.clone())).paused =
                        true;
                }
            }
        }
        Ok(out.into_values().filter(|q| q.waiting > 0 || q.paused).collect())
    }
}
