//! Queue limits, and the reads behind the queue list (the waiting figures,
//! the queue rows); pausing and the list itself are the SQL core's, the
//! claim is in `claim.rs`.

use executor_sql::{Dialect as _, dialect::Queues};
use executor_sql::{limits::Stored, queues::WaitingFigures};

use executor_core::{Namespace, QueueName, Result, queue::QueueLimits};

use crate::{PostgresDialect, conn::RunOn, error, limits, sql::sql};

impl Queues for PostgresDialect {
    /// In one statement: the queues with waiting tasks by a skip scan of
    /// `ix_waiting`, then each queue's range of it (only waiting tasks are
    /// read).
    async fn waiting_figures(&self, ns: &Namespace) -> Result<Vec<WaitingFigures>> {
        let figures =
            sqlx::query(sql!("queues/figures")).bind(ns.as_str()).bind(ns.as_str()).bind(ns.as_str());
        let rows = figures.fetch_all_on(&self.conns).await.map_err(error::storage)?;
        executor_sql::queues::waiting_figures(&rows)
    }

    async fn stored_queues(&self, ns: &Namespace) -> Result<Vec<(String, Stored)>> {
        limits::rows(self, ns).await
    }

    fn limited(&self) -> &executor_sql::limits::LimitedQueues {
        &self.limited
    }

    /// Sets `queue`'s limits (see `QueueControl::set_queue_limits`) in one
    /// statement. The bucket: full for a queue that had no
    /// rate, else its tokens refilled to now under the old rate and capped
    /// at the new burst. `throttled` is kept, and reset with the limits.
    async fn set_limits(&self, ns: &Namespace, queue: &QueueName, limits: &QueueLimits) -> Result<()> {
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
