//! The wake-up: one background task per namespace blocks on the wake marker
//! (`BZPOPMIN <ns>:wake`) on a dedicated connection and tells the waiters of
//! this process through a watch channel. Scripts set the marker when work may
//! have become due (submit, retry, requeue, reap, and a claim that left due
//! work behind); the marker is a single ZSET member, so one process wakes per
//! marker and, if it leaves work behind, sets it again for the next.
//!
//! A waiter also sleeps at most until the earliest due time, measured on the
//! store's clock (`peek.lua`) and timed locally, so a delayed task starts on
//! time without anyone setting the marker.

use std::{
    sync::{Arc, Weak},
    time::Duration,
};

use executor_core::{Namespace, Result};
use fred::{
    interfaces::{ClientLike, SortedSetsInterface},
    types::Value,
};
use tokio::sync::watch;

use crate::{
    RedisStorage,
    record::{array, text},
    storage::Inner,
};

/// How long one BZPOPMIN blocks; bounds how long a dropped storage keeps its
/// watcher connection.
const POP_TIMEOUT: f64 = 1.0;

impl RedisStorage {
    pub(crate) async fn wait(&self, ns: &Namespace, max_wait: Duration) -> Result<()> {
        let mut woken = self.watcher(ns);
        woken.borrow_and_update();
        let mut wait = max_wait;
        for p in 0..self.partitions() {
            let keys = self.keys(ns, p);
            let args = vec![Value::from(keys.base.as_str()), Value::from("0")];
            let reply = array(self.run(&self.inner.scripts.peek, vec![keys.due().to_owned()], args).await?)?;
            let now = reply.first().and_then(text).and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
            if let Some(first) = reply.get(1).and_then(text).and_then(|t| t.parse::<f64>().ok()) {
                if first <= now {
                    return Ok(());
                }
                wait = wait.min(Duration::from_millis((first - now) as u64));
            }
        }
        tokio::select! {
            _ = woken.changed() => {}
            () = tokio::time::sleep(wait) => {}
        }
        Ok(())
    }

    fn watcher(&self, ns: &Namespace) -> watch::Receiver<u64> {
        let mut watchers = self.inner.watchers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A watcher whose task ended (its runtime shut down) is replaced.
        if let Some(rx) = watchers.get(ns)
            && rx.has_changed().is_ok()
        {
            return rx.clone();
        }
        let (tx, rx) = watch::channel(0u64);
        watchers.insert(ns.clone(), rx.clone());
        tokio::spawn(watch_marker(Arc::downgrade(&self.inner), self.inner.layout.wake(ns), tx));
        rx
    }
}

/// Blocks on the wake marker until the storage is dropped.
async fn watch_marker(inner: Weak<Inner>, key: String, tx: watch::Sender<u64>) {
    let Some(client) = inner.upgrade().and_then(|i| i.builder.build().ok()) else { return };
    let _connection = client.init().await;
    let options = fred::types::config::Options { fail_fast: true, ..Default::default() };
    while inner.strong_count() > 0 {
        match client.with_options(&options).bzpopmin::<Value, _>(key.as_str(), POP_TIMEOUT).await {
            Ok(Value::Null) => {}
            Ok(_) => tx.send_modify(|n| *n = n.wrapping_add(1)),
            Err(e) => {
                // Redis is away: let waiters retry (their calls report the
                // error) and try again shortly; reconnecting is fred's job.
                tracing::debug!(error = %e, "wake-up wait failed");
                tx.send_modify(|n| *n = n.wrapping_add(1));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let _ = client.quit().await;
}
