//! Waiting for work without a notification channel: MySQL has none, so an
//! idle claimer polls with a backoff, sleeps exactly until the earliest
//! known due time, and wakes at once on a change made in this process.

use executor_sql::dialect::Wait;
use std::time::Duration;

use executor_core::{Namespace, QueueName, Result};
use sqlx::{MySql, Row, mysql::MySqlArguments, query::Query};
use tokio::time::Instant;

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    sql::{self, padded, sql},
};

/// `wait_ms`: the earliest due time among the waiting tasks of `queues`
/// that are not paused, not at their concurrency limit and whose limits are
/// valid (later for an empty bucket) less now; NULL when none waits. A
/// queue at its concurrency limit does not count: a finish in this process
/// wakes its claimers when it frees the slot, and other processes find it
/// at their next poll (`poll_max` at the most). The inner query is a loose
/// index scan of `ix_queue` (`Using index for group-by`): one dive per
/// waiting (queue, rank), whatever the number of tasks.
fn next_due(ns: &Namespace, queues: &[QueueName]) -> Query<'static, MySql, MySqlArguments> {
    let queues = padded(queues.iter().map(QueueName::as_str));
    let text = sql::slice(sql!("wake/next_due"), "queues", queues.len());
    sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &queues)
        .bind(ns.as_str().to_owned())
        .bind(ns.as_str().to_owned())
}

impl Wait for MySqlDialect {
    /// Resolves when work of `queues` may be due, never later than
    /// `max_wait`:
    /// - at once when this process submits, retries, requeues or reaps (the
    ///   in-process [`tokio::sync::Notify`]);
    /// - when the earliest due time of the waiting tasks of `queues` that
    ///   are not paused arrives (read from the `ix_queue` index: a loose
    ///   index scan, one dive per waiting queue and priority), so due tasks
    ///   of other or paused queues do not end the wait at once (the claimer
    ///   would spin);
    /// - otherwise the poll interval starts at `poll_min` and doubles up to
    ///   `poll_max`, so work submitted by another process starts within
    ///   `poll_max` of becoming due (nothing starts before it is due across processes).
    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        // `max_wait` may be anything up to Duration::MAX (an executor's
        // `max_idle_wait`): an Instant that far out does not exist.
        let end = Instant::now().checked_add(max_wait);
        let mut interval = self.opts.poll_bounds().0;
        loop {
            // Registered before the read, so a submit between the read and the
            // sleep still wakes us.
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // A claimer that serves no queue has nothing to look up.
            let wait_ms: Option<i64> = if queues.is_empty() {
                None
            } else {
                let row = next_due(ns, queues).fetch_one_on(&self.conns).await.map_err(error::storage)?;
                row.try_get("wait_ms").map_err(error::storage)?
            };
            let until_due = match wait_ms {
                Some(ms) if ms <= 0 => return Ok(()),
                Some(ms) => Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
                None => None,
            };
            let now = Instant::now();
            let left = end.map_or(Duration::MAX, |end| end.saturating_duration_since(now));
            if left.is_zero() {
                return Ok(());
            }
            let nap = until_due.map_or(interval, |d| d.min(interval)).min(left);
            let due_within_nap = until_due.is_some_and(|d| d <= nap);
            tokio::select! {
                () = &mut notified => return Ok(()),
                () = tokio::time::sleep(nap) => {}
            }
            if due_within_nap || end.is_some_and(|end| Instant::now() >= end) {
                return Ok(());
            }
            interval = interval.saturating_mul(2).min(self.opts.poll_bounds().1);
        }
    }
}
