//! Adding to the throughput history: one row per (namespace, minute, task
//! name) in `reliable_executor_history`, the minute taken from the
//! server's `statement_timestamp()`. An add is one autocommit upsert over
//! `UNNEST`ed arrays for every name, so adds from many processes sum; the
//! reads and the leader's trim are the SQL core's.

use std::collections::BTreeMap;

use executor_core::{
    Namespace, Result,
    storage::{HistoryCount, check_history},
};
use executor_sql::dialect::History;

use crate::{PostgresDialect, conn::RunOn, error, sql::sql};

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
}
