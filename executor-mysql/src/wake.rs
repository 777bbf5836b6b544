//! Waiting for work without a notification channel: MySQL has none, so an
//! idle claimer polls with a backoff, sleeps exactly until the earliest
//! known due time, and wakes at once on a change made in this process.

use executor_sql::dialect::Wait;
use std::time::Duration;

use executor_core::{Namespace, QueueName, Result};
use sqlx::{MySql, Row, mysql::MySqlArguments, query::Query};

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
        executor_sql::wait::until_due(&self.wake, self.opts.poll_bounds(), max_wait, || async {
            // A claimer that serves no queue has nothing to look up.
            if queues.is_empty() {
                return Ok(None);
            }
            let row = next_due(ns, queues).fetch_one_on(&self.conns).await.map_err(error::storage)?;
            row.try_get("wait_ms").map_err(error::storage)
        })
        .await
    }
}
