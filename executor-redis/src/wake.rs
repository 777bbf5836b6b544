//! The wake-up: one background task per namespace blocks on the wake marker
//! (`BZPOPMIN <ns>:wake`) on a dedicated connection and tells the waiters of
//! this process through a watch channel. Scripts set the marker when work may
//! have become due (submit, retry, requeue, reap, and a claim that left due
//! work behind); the marker is a single ZSET member, so one process wakes per
//! marker and, if it leaves work behind, sets it again for the next.
//!
//! The watcher pops only while a caller of this process waits: a busy process
//! leaves the marker to idle ones. A marker popped after the last waiter left
//! is put back.
//!
//! A waiter also sleeps at most until the earliest due time, measured on the
//! store's clock (`peek.lua`) and timed locally, so a delayed task starts on
//! time without anyone setting the marker. A waiter peeks at the levels of
//! the queues it serves only, and leaves paused queues out: due tasks of
//! other or paused queues would end each wait at once and make the claimer
//! spin.

use std::{
    sync::{
        Arc, PoisonError, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_core::{Namespace, QueueName, Result};
use fred::{
    interfaces::{ClientLike, SortedSetsInterface},
    types::Value,
};
use tokio::sync::{Notify, watch};

use crate::{
    RedisStorage,
    record::{array, text},
    storage::Inner,
};

/// How long one BZPOPMIN blocks; bounds how long a dropped storage keeps its
/// watcher connection.
const POP_TIMEOUT: f64 = 1.0;

/// This process's view of one namespace's wake marker.
#[derive(Clone, Debug)]
pub(crate) struct Watch {
    woken: watch::Receiver<u64>,
    waiters: Arc<AtomicUsize>,
    wanted: Arc<Notify>,
}

/// Counts a waiter for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl RedisStorage {
    /// Waits for a wake-up or the earliest due task of `queues`, paused
    /// queues left out.
    pub(crate) async fn wait_for_work(
        &self,
        ns: &Namespace,
        queues: &[QueueName],
        max_wait: Duration,
    ) -> Result<()> {
        let Watch { mut woken, waiters, wanted } = self.watcher(ns);
        waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&waiters);
        wanted.notify_one();
        woken.borrow_and_update();
        let mut wait = max_wait;
        // Nothing served: only a wake-up or the limit ends the wait.
        let peeked = if queues.is_empty() { 0 } else { self.partitions() };
        for p in 0..peeked {
            let keys = self.keys(ns, p);
            let mut args = vec![Value::from(keys.base.as_str()), Value::from("0")];
            args.extend(queues.iter().map(|q| Value::from(q.as_str())));
            let reply = array(self.run(&self.inner.scripts.peek, keys.script_keys.to_vec(), args).await?)?;
            let now_us = reply.first().and_then(text).and_then(|t| t.parse::<u64>().ok()).unwrap_or(0);
            if let Some(first_ms) = reply.get(1).and_then(text).and_then(|t| t.parse::<f64>().ok()) {
                let first_us = (first_ms as u64).saturating_mul(1000);
                if first_us <= now_us {
                    return Ok(());
                }
                wait = wait.min(Duration::from_micros(first_us - now_us));
            }
        }
        tokio::select! {
            _ = woken.changed() => {}
            () = tokio::time::sleep(wait) => {}
        }
        Ok(())
    }

    fn watcher(&self, ns: &Namespace) -> Watch {
        let mut watchers = self.inner.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        // A watcher whose task ended (its runtime shut down) is replaced.
        if let Some(w) = watchers.get(ns)
            && w.woken.has_changed().is_ok()
        {
            return w.clone();
        }
        let (tx, rx) = watch::channel(0u64);
        let w = Watch { woken: rx, waiters: Arc::new(AtomicUsize::new(0)), wanted: Arc::new(Notify::new()) };
        watchers.insert(ns.clone(), w.clone());
        let (inner, key) = (Arc::downgrade(&self.inner), self.inner.layout.wake(ns));
        tokio::spawn(watch_marker(inner, key, tx, Arc::clone(&w.waiters), Arc::clone(&w.wanted)));
        w
    }
}

/// Blocks on the wake marker while someone waits, until the storage is dropped.
async fn watch_marker(
    inner: Weak<Inner>,
    key: String,
    tx: watch::Sender<u64>,
    waiters: Arc<AtomicUsize>,
    wanted: Arc<Notify>,
) {
    let Some(client) = inner.upgrade().and_then(|i| i.builder.build().ok()) else { return };
    let _connection = client.init().await;
    let options = fred::types::config::Options { fail_fast: true, ..Default::default() };
    while inner.strong_count() > 0 {
        if waiters.load(Ordering::SeqCst) == 0 {
            let _ = tokio::time::timeout(Duration::from_secs(1), wanted.notified()).await;
            continue;
        }
        match client.with_options(&options).bzpopmin::<Value, _>(key.as_str(), POP_TIMEOUT).await {
            // fred turns BZPOPMIN's nil reply (its block ran out with no
            // marker) into a `Timeout` error: that is no marker, not Redis
            // being away, and the next pop starts at once. Treated as an
            // outage it woke every waiter for nothing and left the marker
            // unwatched for 100 ms, so a task submitted just after an idle
            // second started up to 100 ms late.
            Ok(Value::Null) => {}
            Err(e) if *e.kind() == fred::error::ErrorKind::Timeout => {}
            Ok(_) if waiters.load(Ordering::SeqCst) > 0 => tx.send_modify(|n| *n = n.wrapping_add(1)),
            Ok(_) => {
                // Nobody here waits any more: leave the marker to other processes.
                let _: std::result::Result<Value, _> =
                    client.zadd(key.as_str(), None, None, false, false, (0.0, "w")).await;
            }
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
