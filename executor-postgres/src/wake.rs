//! Waiting for work: LISTEN/NOTIFY across processes, an in-process wake-up,
//! a timer to the earliest due time, and a slow poll as the safety net.
//!
//! A trigger on the tasks table sends the namespace on the channel
//! `reliable_executor` whenever a task starts waiting (see the migration):
//! a submit, a retry, a requeue, a reaped lease. Every storage holds one
//! connection that LISTENs on it ([`Listener`]) and wakes the waiters of
//! that namespace in this process ([`Wakes`]); they read the earliest due
//! time again and either claim at once or sleep until it. NOTIFY is
//! delivered on commit, so a task submitted inside a transaction wakes
//! claimers when the transaction commits, and a rolled-back one never does.
//!
//! MySQL has nothing like it, which is why its claimers poll (docs/mysql.md).

use executor_sql::dialect::Wait;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use executor_core::{Namespace, QueueName, Result};
use sqlx::{
    PgPool, Postgres, Row,
    postgres::{PgArguments, PgListener},
    query::Query,
};
use tokio::{sync::Notify, time::Instant};

use crate::{PostgresDialect, conn::RunOn, error, sql::sql};

/// The channel the trigger notifies on.
pub(crate) const CHANNEL: &str = "reliable_executor";

/// One [`Notify`] per namespace a waiter of this process has asked about.
#[derive(Debug, Default)]
pub(crate) struct Wakes(Mutex<HashMap<String, Arc<Notify>>>);

impl Wakes {
    /// The wake-up of `ns`.
    fn of(&self, ns: &str) -> Arc<Notify> {
        let Ok(mut map) = self.0.lock() else { return Arc::new(Notify::new()) };
        Arc::clone(map.entry(ns.to_owned()).or_insert_with(|| Arc::new(Notify::new())))
    }

    /// Wakes every waiter of `ns` in this process.
    pub(crate) fn notify(&self, ns: &str) {
        let notify = self.0.lock().ok().and_then(|map| map.get(ns).cloned());
        if let Some(n) = notify {
            n.notify_waiters();
        }
    }

    /// Wakes every waiter: notifications may have been lost (the listening
    /// connection was re-established).
    fn notify_all(&self) {
        let all: Vec<Arc<Notify>> =
            self.0.lock().map(|map| map.values().cloned().collect()).unwrap_or_default();
        for n in all {
            n.notify_waiters();
        }
    }
}

/// The task that LISTENs for the storage; aborted when the last clone of
/// the storage is dropped.
#[derive(Debug)]
pub(crate) struct Listener {
    pool: PgPool,
    wakes: Arc<Wakes>,
    task: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// When the last try to start failed: the next is at least
    /// [`RETRY_START`] later, so a server that is down does not make every
    /// wait pay for a failed connect.
    failed_at: std::sync::Mutex<Option<Instant>>,
}

/// How long after a failed start the next wait tries again.
const RETRY_START: Duration = Duration::from_secs(5);

impl Listener {
    pub(crate) fn new(pool: PgPool, wakes: Arc<Wakes>) -> Self {
        Self { pool, wakes, task: tokio::sync::Mutex::new(None), failed_at: std::sync::Mutex::new(None) }
    }

    /// Starts listening, if not already: returns once the LISTEN is in
    /// place (or failed: then the waits poll, and a wait at least 5 s
    /// later tries again).
    pub(crate) async fn start(&self) {
        let recently_failed =
            self.failed_at.lock().ok().and_then(|f| *f).is_some_and(|at| at.elapsed() < RETRY_START);
        if recently_failed {
            return;
        }
        let mut task = self.task.lock().await;
        if task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let listener = async {
            let mut l = PgListener::connect_with(&self.pool).await?;
            l.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(l)
        };
        match tokio::time::timeout(Duration::from_secs(5), listener).await {
            Ok(Ok(l)) => {
                let wakes = Arc::clone(&self.wakes);
                *task = Some(tokio::spawn(listen(l, wakes)));
                return;
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "LISTEN failed; idle claimers poll until it works"),
            Err(_) => tracing::warn!("LISTEN took over 5 s; idle claimers poll until it works"),
        }
        if let Ok(mut f) = self.failed_at.lock() {
            *f = Some(Instant::now());
        }
    }
}

impl Listener {
    /// Stops listening and gives the connection back.
    pub(crate) async fn stop(&self) {
        if let Some(task) = self.task.lock().await.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(task) = self.task.get_mut().take() {
            task.abort();
        }
    }
}

/// Wakes the waiters of each namespace notified; after a lost connection
/// (sqlx reconnects and listens again) wakes every waiter, since
/// notifications sent meanwhile are gone.
async fn listen(mut l: PgListener, wakes: Arc<Wakes>) {
    loop {
        match l.try_recv().await {
            Ok(Some(n)) => wakes.notify(n.payload()),
            Ok(None) => {
                tracing::debug!("LISTEN connection lost and re-established");
                wakes.notify_all();
            }
            // The pool is closing: give the connection back so the close
            // can finish, and stop listening.
            Err(sqlx::Error::PoolClosed) => {
                wakes.notify_all();
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "LISTEN connection failed; trying again in 1 s");
                wakes.notify_all();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// `wait_ms`: the earliest due time among the waiting tasks of `queues`
/// that are not paused, not at their concurrency limit and whose limits are
/// valid (later for an empty bucket) less now; NULL when none waits. A
/// queue at its concurrency limit does not count: a finish frees the slot,
/// and the finishing process claims again itself.
fn next_due<'q>(ns: &'q Namespace, queues: &[QueueName]) -> Query<'q, Postgres, PgArguments> {
    sqlx::query(sql!("wake/next_due"))
        .bind(queues.iter().map(|q| q.as_str().to_owned()).collect::<Vec<String>>())
        .bind(ns.as_str())
        .bind(ns.as_str())
        .bind(ns.as_str())
}

impl Wait for PostgresDialect {
    /// Resolves when work of `queues` may be due, never later than
    /// `max_wait`:
    /// - at once when a task starts waiting in `ns` in any process (the
    ///   trigger's NOTIFY, or this process directly);
    /// - when the earliest due time of the waiting tasks of `queues` arrives
    ///   (read from the `ix_waiting` index: one probe per waiting queue and
    ///   priority), counting only queues that are not paused, not at their
    ///   concurrency limit and with valid limits (later for an empty
    ///   bucket), so due tasks of other queues do not end the wait at once;
    /// - otherwise after the poll interval, from `poll_min` doubling up to
    ///   `poll_max`: the net under a lost notification.
    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        self.listener.start().await;
        let wake = self.wakes.of(ns.as_str());
        executor_sql::wait::until_due(&wake, self.opts.poll_bounds(), max_wait, || async {
            if queues.is_empty() {
                return Ok(None);
            }
            let row = next_due(ns, queues).fetch_one_on(&self.conns).await.map_err(error::storage)?;
            row.try_get("wait_ms").map_err(error::storage)
        })
        .await
    }
}
