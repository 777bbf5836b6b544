//! Queue limits, and the reads behind the queue list (the waiting figures,
//! the queue rows); pausing and the list itself are the SQL core's, the
//! claim is in `claim.rs`.

use executor_sql::dialect::Queues;
use executor_sql::{limits::Stored, queues::WaitingFigures};

use executor_core::{Namespace, QueueName, Result, queue::QueueLimits};
use sqlx::Row;

use crate::{
    MySqlDialect,
    conn::RunOn,
    error, limits,
    sql::{self, padded, sql},
};

impl MySqlDialect {
    /// The queues of `ns` that have waiting tasks, as stored, in name
    /// order. Only single dives into `ix_queue`, which the optimizer takes
    /// whatever its statistics say (`Select tables optimized away`): the
    /// next queue name after the last one (`MIN(queue)` over the rest of the
    /// namespace's range), once per queue name the namespace holds, then the
    /// highest rank of each of those queues, at most 500 per statement
    /// (`MAX(queue_rank)`: the queue's last index entry; finished tasks have
    /// no rank and sort first, so a queue has waiting tasks exactly when its
    /// last entry has one). The loose index scan this replaced (`GROUP BY
    /// ns, queue`) was planned as a scan of the whole namespace once a
    /// million finished tasks were retained in it: 3.5 s per call.
    pub(crate) async fn waiting_queues(&self, ns: &Namespace) -> Result<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        loop {
            let row = match names.last() {
                None => sqlx::query(sql!("queues/first_queue"))
                    .bind(ns.as_str())
                    .fetch_one_on(&self.conns)
                    .await
                    .map_err(error::storage)?,
                Some(last) => sqlx::query(sql!("queues/next_queue"))
                    .bind(ns.as_str())
                    .bind(last.as_str())
                    .fetch_one_on(&self.conns)
                    .await
                    .map_err(error::storage)?,
            };
            let next: Option<String> = row.try_get("queue").map_err(error::storage)?;
            match next {
                // Each name comes after the last under the column's binary
                // collation, so the walk ends; a server answering otherwise
                // stops it rather than looping.
                Some(name) if names.last().is_none_or(|last| name.as_str() > last.as_str()) => {
                    names.push(name)
                }
                Some(name) => {
                    tracing::warn!(queue = %name, "queue names did not come in order; the list of waiting queues stops there");
                    break;
                }
                None => break,
            }
        }
        let mut waiting = Vec::new();
        for chunk in names.chunks(500) {
            // One statement of up to 500 single dives, joined by UNION ALL.
            let text = vec![sql!("queues/top_rank"); chunk.len()].join(" UNION ALL ");
            let mut q = sql::query(text);
            for name in chunk {
                q = q.bind(name.clone()).bind(ns.as_str().to_owned()).bind(name.clone());
            }
            for r in q.fetch_all_on(&self.conns).await.map_err(error::storage)? {
                let top: Option<i64> = r.try_get("top").map_err(error::storage)?;
                if top.is_some() {
                    waiting.push(r.try_get::<String, _>("queue").map_err(error::storage)?);
                }
            }
        }
        Ok(waiting)
    }
}

impl Queues for MySqlDialect {
    /// In two statements: the queues with waiting tasks (a loose index
    /// scan of `ix_queue`), then their figures (ranges of `ix_queue` over
    /// the waiting tasks only, on the server's clock).
    async fn waiting_figures(&self, ns: &Namespace) -> Result<Vec<WaitingFigures>> {
        let waiting = self.waiting_queues(ns).await?;
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let queues = padded(waiting.iter().map(String::as_str));
        let text = sql::slice(sql!("queues/figures"), "queues", queues.len());
        let q = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &queues);
        let rows = q.fetch_all_on(&self.conns).await.map_err(error::storage)?;
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
        let starts = limits.rate.map(|r| r.starts);
        let per = limits.rate.map(|r| crate::sql::ms(r.per));
        let burst = limits.rate.map(|r| r.burst);
        let full = f64::from(burst.unwrap_or(0));
        // Assignments run left to right on the updated values: `tokens`
        // reads the old rate and time before they are replaced.
        sqlx::query(sql!("limits/set"))
            .bind(ns.as_str())
            .bind(queue.as_str())
            .bind(limits.concurrency)
            .bind(starts)
            .bind(per)
            .bind(burst)
            .bind(full)
            .bind(starts)
            .bind(full)
            .bind(full)
            .bind(limits.concurrency)
            .bind(starts)
            .bind(per)
            .bind(burst)
            .execute_on(&self.conns)
            .await
            .map_err(error::storage)?;
        self.limited.remember(ns, queue);
        // A raised limit may let a waiting claimer here take more.
        self.notify_work();
        Ok(())
    }
}
