//! Queue controls (issue 16): pausing a queue fleet-wide and the per-queue
//! figures. The claim itself is in `claim.rs`.

use std::collections::BTreeMap;

use executor_core::{Namespace, QueueInfo, QueueName, Result, Timestamp};
use sqlx::{MySql, QueryBuilder, Row};

use crate::{
    MySqlStorage,
    conn::RunOn,
    error, limits,
    sql::{limited, now_ms, push_in_list, queues, ranks, tasks},
};

impl MySqlStorage {
    /// Pauses or resumes `queue`: a row in the queues table while it is
    /// paused or has limits, none otherwise. Every claim statement reads it
    /// (see `claim_queues`), so a pause holds for every process from the
    /// next claim on. Resuming deletes a row that holds no limits and
    /// clears the flag of one that does, and wakes this process's waiting
    /// claimers.
    pub(crate) async fn pause_queue(&self, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
        let statements: &[&'static str] = if paused {
            &[concat!(
                "INSERT INTO ",
                queues!(),
                " (ns, queue, paused, tokens_at) VALUES (?, ?, 1, ",
                now_ms!(),
                ") ON DUPLICATE KEY UPDATE paused = 1"
            )]
        } else {
            &[
                concat!(
                    "DELETE p FROM ",
                    queues!(),
                    " p WHERE p.ns = ? AND p.queue = ? AND NOT ",
                    limited!()
                ),
                concat!("UPDATE ", queues!(), " SET paused = 0 WHERE ns = ? AND queue = ?"),
            ]
        };
        for statement in statements {
            sqlx::query(*statement)
                .bind(ns.as_str())
                .bind(queue.as_str())
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)?;
        }
        if !paused {
            self.notify_work();
        }
        Ok(())
    }

    /// Every queue with waiting or running tasks, paused or with limits,
    /// by name, in four statements: the queues with waiting tasks (a loose
    /// index scan of `ix_queue`), their figures (ranges of `ix_queue` over
    /// the waiting tasks only, on the server's clock), the running tasks
    /// per queue (the namespace's `RUNNING` range of `ix_lease`, which
    /// holds the queue: no row is read), the rows of the queues table
    /// (paused, limits, throttled). A name that is not a valid queue name
    /// (a hand-edited row) is left out and logged.
    pub(crate) async fn queues(&self, ns: &Namespace) -> Result<Vec<QueueInfo>> {
        let mut out: BTreeMap<QueueName, QueueInfo> = BTreeMap::new();
        let waiting = self.waiting_queues(ns).await?;
        if !waiting.is_empty() {
            let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!(
                "SELECT queue, COUNT(*) AS waiting, CAST(SUM(ready_at <= ",
                now_ms!(),
                ") AS SIGNED) AS due, MIN(IF(ready_at <= ",
                now_ms!(),
                ", ready_at, NULL)) AS oldest_due FROM ",
                tasks!(),
                " WHERE ns = "
            ));
            qb.push_bind(ns.as_str().to_owned()).push(" AND queue IN ");
            push_in_list(&mut qb, waiting.iter().map(String::as_str));
            qb.push(concat!(" AND queue_rank IN ", ranks!(), " GROUP BY queue"));
            for r in qb.build().fetch_all_on(&self.conns).await.map_err(error::storage)? {
                let name: String = r.try_get("queue").map_err(error::storage)?;
                let Some(queue) = valid(&name) else { continue };
                let waiting: i64 = r.try_get("waiting").map_err(error::storage)?;
                let due: Option<i64> = r.try_get("due").map_err(error::storage)?;
                let oldest: Option<i64> = r.try_get("oldest_due").map_err(error::storage)?;
                let info = out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue));
                info.waiting += u64::try_from(waiting).unwrap_or(0);
                info.due += due.and_then(|d| u64::try_from(d).ok()).unwrap_or(0);
                let oldest = oldest.and_then(|t| u64::try_from(t).ok()).map(Timestamp::from_millis);
                info.oldest_due = match (info.oldest_due, oldest) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        let running = sqlx::query(concat!(
            "SELECT queue, COUNT(*) AS running FROM ",
            tasks!(),
            " WHERE ns = ? AND state = 'RUNNING' GROUP BY queue"
        ))
        .bind(ns.as_str())
        .fetch_all_on(&self.conns)
        .await
        .map_err(error::storage)?;
        for r in running {
            let name: String = r.try_get("queue").map_err(error::storage)?;
            let Some(queue) = valid(&name) else { continue };
            let n: i64 = r.try_get("running").map_err(error::storage)?;
            out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue)).running =
                u64::try_from(n).unwrap_or(0);
        }
        for row in limits::rows(self, ns).await? {
            let Some(queue) = valid(&row.name) else { continue };
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
                None => sqlx::query(concat!("SELECT MIN(queue) AS queue FROM ", tasks!(), " WHERE ns = ?"))
                    .bind(ns.as_str())
                    .fetch_one_on(&self.conns)
                    .await
                    .map_err(error::storage)?,
                Some(last) => sqlx::query(concat!(
                    "SELECT MIN(queue) AS queue FROM ",
                    tasks!(),
                    " WHERE ns = ? AND queue > ?"
                ))
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
            let mut qb: QueryBuilder<MySql> = QueryBuilder::new("");
            for (i, name) in chunk.iter().enumerate() {
                if i > 0 {
                    qb.push(" UNION ALL ");
                }
                qb.push("SELECT ")
                    .push_bind(name.clone())
                    .push(concat!(
                        " AS queue, CAST(MAX(queue_rank) AS SIGNED) AS top FROM ",
                        tasks!(),
                        " WHERE ns = "
                    ))
                    .push_bind(ns.as_str().to_owned())
                    .push(" AND queue = ")
                    .push_bind(name.clone());
            }
            for r in qb.build().fetch_all_on(&self.conns).await.map_err(error::storage)? {
                let top: Option<i64> = r.try_get("top").map_err(error::storage)?;
                if top.is_some() {
                    waiting.push(r.try_get::<String, _>("queue").map_err(error::storage)?);
                }
            }
        }
        Ok(waiting)
    }
}

/// `name` as a queue name, or `None` (logged) for a hand-edited value.
fn valid(name: &str) -> Option<QueueName> {
    match QueueName::new(name) {
        Ok(q) => Some(q),
        Err(e) => {
            tracing::warn!(queue = %name, error = %e, "stored queue name is not valid; left out of the queue list");
            None
        }
    }
}
