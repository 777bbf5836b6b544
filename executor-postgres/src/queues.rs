//! Queue controls: pausing a queue fleet-wide and the per-queue figures.
//! The claim itself is in `claim.rs`.

use executor_sql::{Dialect as _, dialect::Queues, row::queue_name};
use std::collections::BTreeMap;

use executor_core::{
    Namespace, QueueName, Result, Timestamp,
    queue::{QueueInfo, QueueLimits},
};
use sqlx::Row;

use crate::{PostgresDialect, conn::RunOn, error, limits, sql::sql};

impl Queues for PostgresDialect {
    /// Every queue with waiting or running tasks, paused or with limits,
    /// by name: the waiting figures per queue (the waiting queues by a skip
    /// scan of `ix_waiting`, then each queue's range of it: only waiting
    /// tasks are read), the running tasks per queue (`ix_running`), the
    /// rows of the queues table (paused, limits, throttled). A name that is
    /// not a valid queue name (a hand-edited row) is left out and logged.
    async fn queues(&self, ns: &Namespace) -> Result<Vec<QueueInfo>> {
        let mut out: BTreeMap<QueueName, QueueInfo> = BTreeMap::new();
        let figures =
            sqlx::query(sql!("queues/figures")).bind(ns.as_str()).bind(ns.as_str()).bind(ns.as_str());
        for r in figures.fetch_all_on(&self.conns).await.map_err(error::storage)? {
            let name: String = r.try_get("queue").map_err(error::storage)?;
            let Some(queue) = queue_name(&name) else { continue };
            let waiting: i64 = r.try_get("waiting").map_err(error::storage)?;
            let due: i64 = r.try_get("due").map_err(error::storage)?;
            let oldest: Option<i64> = r.try_get("oldest_due").map_err(error::storage)?;
            let info = out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue));
            info.waiting += u64::try_from(waiting).unwrap_or(0);
            info.due += u64::try_from(due).unwrap_or(0);
            info.oldest_due = oldest.and_then(|t| u64::try_from(t).ok()).map(Timestamp::from_millis);
        }
        let running = sqlx::query(sql!("queues/running"))
            .bind(ns.as_str())
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        for r in running {
            let name: String = r.try_get("queue").map_err(error::storage)?;
            let Some(queue) = queue_name(&name) else { continue };
            let n: i64 = r.try_get("running").map_err(error::storage)?;
            out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue)).running =
                u64::try_from(n).unwrap_or(0);
        }
        for row in limits::rows(self, ns).await? {
            let Some(queue) = queue_name(&row.name) else { continue };
            if !row.paused && !row.has_limits {
                // A row left by a resume racing a clear: nothing to show.
                continue;
            }
            let info = out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue));
            info.paused = row.paused;
            info.limits = row.limits;
            info.throttled = row.throttled;
        }
        Ok(out.into_values().collect())
    }

    /// Sets `queue`'s limits (see `QueueControl::set_queue_limits`) in one
    /// statement; [`QueueLimits::new`] removes them, and the row with them
    /// unless the queue is paused. The bucket: full for a queue that had no
    /// rate, else its tokens refilled to now under the old rate and capped
    /// at the new burst. `throttled` is kept, and reset with the limits.
    async fn set_queue_limits(&self, ns: &Namespace, queue: &QueueName, limits: &QueueLimits) -> Result<()> {
        limits.validate()?;
        if limits.is_none() {
            sqlx::query(sql!("limits/delete_unlimited"))
                .bind(ns.as_str())
                .bind(queue.as_str())
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)?;
            sqlx::query(sql!("limits/clear"))
                .bind(ns.as_str())
                .bind(queue.as_str())
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)?;
            self.limited.forget(ns, queue);
            self.announce_work(ns).await?;
            return Ok(());
        }
        let starts = limits.rate.map(|r| crate::sql::int(r.starts));
        let per = limits.rate.map(|r| crate::sql::ms(r.per));
        let burst = limits.rate.map(|r| crate::sql::int(r.burst));
        let full = f64::from(limits.rate.map_or(0, |r| r.burst));
        // The SET reads the row as it was (`q.`): the tokens are refilled
        // under the old rate and time before they are replaced.
        sqlx::query(sql!("limits/set"))
            .bind(ns.as_str())
            .bind(queue.as_str())
            .bind(limits.concurrency.map(crate::sql::int))
            .bind(starts)
            .bind(per)
            .bind(burst)
            .bind(full)
            .execute_on(&self.conns)
            .await
            .map_err(error::storage)?;
        self.limited.remember(ns, queue);
        // A raised limit may let waiting claimers anywhere take more.
        self.announce_work(ns).await?;
        Ok(())
    }
}
