//! Waiting for work without a notification channel: MySQL has none, so an
//! idle claimer polls with a backoff, sleeps exactly until the earliest
//! known due time, and wakes at once on a change made in this process.

use std::time::Duration;

use executor_core::{Namespace, Result};
use sqlx::Row;
use tokio::time::Instant;

use crate::{
    MySqlStorage,
    conn::RunOn,
    error,
    sql::{now_ms, tasks},
};

impl MySqlStorage {
    /// Resolves when work may be due, never later than `max_wait`:
    /// - at once when this process submits, retries, requeues or reaps (the
    ///   in-process [`tokio::sync::Notify`]);
    /// - when the earliest waiting task's due time arrives (read from the
    ///   `ix_ready` index, one index dive per poll);
    /// - otherwise the poll interval starts at `poll_min` and doubles up to
    ///   `poll_max`, so work submitted by another process starts within
    ///   `poll_max` of becoming due (invariant 4 across processes).
    pub(crate) async fn wait_for_work(&self, ns: &Namespace, max_wait: Duration) -> Result<()> {
        // `max_wait` may be anything up to Duration::MAX (an executor's
        // `max_idle_wait`): an Instant that far out does not exist.
        let end = Instant::now().checked_add(max_wait);
        let mut interval = self.opts.poll_min;
        loop {
            // Registered before the read, so a submit between the read and the
            // sleep still wakes us.
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let row = sqlx::query(concat!(
                "SELECT MIN(ready_at) - ",
                now_ms!(),
                " AS wait_ms FROM ",
                tasks!(),
                " WHERE ns = ?"
            ))
            .bind(ns.as_str())
            .fetch_one_on(&self.conns)
            .await
            .map_err(error::storage)?;
            let wait_ms: Option<i64> = row.try_get("wait_ms").map_err(error::storage)?;
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
            interval = interval.saturating_mul(2).min(self.opts.poll_max);
        }
    }
}
