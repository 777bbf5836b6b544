//! Throughput history (issue 18): one row per (namespace, minute, task
//! name) in `reliable_executor_history`, the minute taken from the
//! server's `statement_timestamp()`. An add is one autocommit upsert over
//! `UNNEST`ed arrays for every name, so adds from many processes sum; the
//! leader's trim is one `DELETE`.

use executor_sql::dialect::History;
use std::collections::BTreeMap;

use executor_core::{
    Namespace, Result, Timestamp,
    storage::{HistoryBucket, HistoryCount, check_history},
};
use sqlx::postgres::PgRow;

use crate::{PostgresDialect, conn::RunOn, error, row::col, sql::sql};

/// One row as a bucket, or why it is left out.
fn bucket(r: &PgRow) -> Result<HistoryBucket, String> {
    let name: String = col(r, "name")?;
    HistoryBucket::from_columns(col(r, "minute")?, name, col(r, "succeeded")?, col(r, "failed")?)
}

impl History for PostgresDialect {
    /// One `INSERT .. ON CONFLICT DO UPDATE` for every count. Counts of one
    /// name are merged first (an upsert may not touch a row twice) and sent
    /// in the order of the primary key, so concurrent adders lock rows in
    /// one order; a deadlock rolls the statement back whole, so running it
    /// again counts nothing twice.
    async fn add_history(&self, ns: &Namespace, counts: &[HistoryCount]) -> Result<()> {
        let counts = check_history(counts)?;
        if counts.is_empty() {
            return Ok(());
        }
        let mut merged: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for c in counts {
            let e = merged.entry(c.name.as_str()).or_default();
            e.0 = e.0.saturating_add(i64::try_from(c.succeeded).unwrap_or(i64::MAX));
            e.1 = e.1.saturating_add(i64::try_from(c.failed).unwrap_or(i64::MAX));
        }
        if merged.keys().any(|n| n.contains('\0')) {
            return Err(executor_core::Error::invalid(
                "history name",
                "PostgreSQL text cannot hold a NUL byte",
            ));
        }
        let names: Vec<&str> = merged.keys().copied().collect();
        let succeeded: Vec<i64> = merged.values().map(|v| v.0).collect();
        let failed: Vec<i64> = merged.values().map(|v| v.1).collect();
        error::retry_lock_conflicts(|| async {
            sqlx::query(sql!("history/add"))
                .bind(ns.as_str())
                .bind(&names)
                .bind(&succeeded)
                .bind(&failed)
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await
        .map(drop)
    }

    /// Every bucket from `since` on, by minute then name (bytes). A row
    /// that does not read back (a negative count, edited by hand) is left
    /// out with a warning.
    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<HistoryBucket>> {
        let since = i64::try_from(since.as_millis()).unwrap_or(i64::MAX);
        let rows = sqlx::query(sql!("history/read"))
            .bind(ns.as_str())
            .bind(since)
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            match bucket(r) {
                Ok(b) => out.push(b),
                Err(reason) => tracing::warn!(namespace = %ns, %reason, "left out an unreadable history row"),
            }
        }
        Ok(out)
    }

    /// Deletes the minutes before `before`; how many rows went.
    async fn trim_history(&self, ns: &Namespace, before: Timestamp) -> Result<u64> {
        let before = i64::try_from(before.as_millis()).unwrap_or(i64::MAX);
        let done = error::retry_lock_conflicts(|| async {
            sqlx::query(sql!("history/trim"))
                .bind(ns.as_str())
                .bind(before)
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected())
    }
}
