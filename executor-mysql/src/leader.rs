//! Leadership of a namespace's housekeeping: one row per namespace holding
//! the leader, its fencing token and the end of its term; and the workers'
//! announcements the leader compares, one row per worker.

use executor_sql::dialect::Leader;
use std::time::Duration;

use executor_core::{Error, Namespace, Result, Timestamp, WorkerId, WorkerInfo, storage::Leadership};
use sqlx::{Row, mysql::MySqlRow};

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    sql::{ms, sql},
};

fn term(r: &MySqlRow) -> Result<Leadership> {
    let worker: String = r.try_get("worker").map_err(error::storage)?;
    let until: i64 = r.try_get("until_ms").map_err(error::storage)?;
    Ok(Leadership::new(
        WorkerId::new(worker)?,
        r.try_get("token").map_err(error::storage)?,
        Timestamp::from_millis(u64::try_from(until).unwrap_or(0)),
    ))
}

impl Leader for MySqlDialect {
    /// Takes the term if it is free or expired (token + 1), renews it if
    /// `worker` already holds it (same token), else `None`. One autocommit
    /// upsert decides on the server's clock; a plain read then tells who holds
    /// the term. No transaction: a process stopped between the two holds no
    /// lock on the row, so the others can take the term once it expires
    /// (invariant 9). Should the term change hands in between (only after a
    /// pause longer than the term), the read shows the new holder and this
    /// worker is told it does not lead.
    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        error::retry_lock_conflicts(|| async {
            // Assignments run left to right: token and worker read the old
            // until_ms; until_ms reads the new worker.
            sqlx::query(sql!("leader/acquire"))
                .bind(ns.as_str())
                .bind(worker.as_str())
                .bind(ms(ttl))
                .bind(worker.as_str())
                .bind(worker.as_str())
                .bind(ms(ttl))
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)?;
            let row = sqlx::query(sql!("leader/read_term"))
                .bind(ns.as_str())
                .fetch_optional_on(&self.conns)
                .await
                .map_err(error::storage)?;
            match row.map(|r| term(&r)).transpose()? {
                Some(t) if &t.worker == worker => Ok(Some(t)),
                _ => Ok(None),
            }
        })
        .await
    }

    /// Ends the term early if `term` still holds it; the row stays so the next
    /// term's token is larger.
    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        sqlx::query(sql!("leader/release"))
            .bind(ns.as_str())
            .bind(term.worker.as_str())
            .bind(term.token)
            .execute_on(&self.conns)
            .await
            .map_err(error::storage)?;
        Ok(())
    }

    /// The unexpired term, if any.
    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        let row = sqlx::query(sql!("leader/current"))
            .bind(ns.as_str())
            .fetch_optional_on(&self.conns)
            .await
            .map_err(error::storage)?;
        row.map(|r| term(&r)).transpose()
    }

    /// Upserts `worker`'s row: its names and `now + ttl` on the server's clock.
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        executor_core::storage::check_duration("announce ttl", ttl)?;
        let names =
            serde_json::to_string(names).map_err(|e| Error::invalid("handler names", e.to_string()))?;
        error::retry_lock_conflicts(|| async {
            sqlx::query(sql!("leader/announce"))
                .bind(ns.as_str())
                .bind(worker.as_str())
                .bind(&names)
                .bind(ms(ttl))
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await
        .map(drop)
    }

    /// Deletes the lapsed rows of `ns`, then reads the others; a row that does
    /// not parse is left out.
    async fn workers(&self, ns: &Namespace) -> Result<Vec<WorkerInfo>> {
        sqlx::query(sql!("leader/delete_lapsed_workers"))
            .bind(ns.as_str())
            .execute_on(&self.conns)
            .await
            .map_err(error::storage)?;
        let rows = sqlx::query(sql!("leader/workers"))
            .bind(ns.as_str())
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let worker = WorkerId::new(r.try_get::<String, _>("worker").ok()?).ok()?;
                let names: Vec<String> = serde_json::from_str(&r.try_get::<String, _>("names").ok()?).ok()?;
                let until = u64::try_from(r.try_get::<i64, _>("until_ms").ok()?).ok()?;
                Some(WorkerInfo::new(worker, names, Timestamp::from_millis(until)))
            })
            .collect())
    }
}
