//! Throughput history (issue 18): one row per (namespace, minute, task
//! name) in `reliable_executor_history`, the minute taken from the server's
//! `NOW(3)`. An add is one autocommit upsert for every name, so adds from
//! many processes sum; the leader's trim is one `DELETE`.

use executor_sql::dialect::History;
use std::collections::BTreeMap;

use executor_core::{
    Namespace, Result, Timestamp,
    storage::{HistoryBucket, HistoryCount, check_history},
};
use sqlx::mysql::MySqlRow;

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    row::col,
    sql::{self, sql},
};

/// One row as a bucket, or why it is left out.
fn bucket(r: &MySqlRow) -> Result<HistoryBucket, String> {
    let name: Vec<u8> = col(r, "name")?;
    let name = String::from_utf8(name).map_err(|_| "column `name` is not UTF-8".to_owned())?;
    HistoryBucket::from_columns(col(r, "minute")?, name, col(r, "succeeded")?, col(r, "failed")?)
}

impl History for MySqlDialect {
    /// One `INSERT .. ON DUPLICATE KEY UPDATE` for every count, in the
    /// order of the primary key (so concurrent adders lock rows in one
    /// order); a deadlock or lock wait rolls the statement back whole, so
    /// running it again counts nothing twice.
    async fn add_history(&self, ns: &Namespace, counts: &[HistoryCount]) -> Result<()> {
        let mut counts = check_history(counts)?;
        if counts.is_empty() {
            return Ok(());
        }
        counts.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        error::retry_lock_conflicts(|| async {
            let mut q = sql::query(sql::slice(sql!("history/add"), "rows", counts.len()));
            for c in &counts {
                q = q
                    .bind(ns.as_str().to_owned())
                    .bind(c.name.as_bytes().to_vec())
                    .bind(i64::try_from(c.succeeded).unwrap_or(i64::MAX))
                    .bind(i64::try_from(c.failed).unwrap_or(i64::MAX));
            }
            q.execute_on(&self.conns).await.map_err(error::storage)
        })
        .await
        .map(drop)
    }

    /// Every bucket from `since` on, by minute then name (bytes). A row
    /// that does not read back (a negative count, a name that is not
    /// UTF-8, edited by hand) is left out with a warning.
    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<HistoryBucket>> {
        let since = i64::try_from(since.as_millis()).unwrap_or(i64::MAX);
        let rows = sqlx::query(sql!("history/read"))
            .bind(ns.as_str())
            .bind(since)
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        // Keyed, so the order is the bytes' whatever the server sorted by.
        let mut out = BTreeMap::new();
        for r in &rows {
            match bucket(r) {
                Ok(b) => {
                    out.insert((b.minute, b.name.clone()), b);
                }
                Err(reason) => tracing::warn!(namespace = %ns, %reason, "left out an unreadable history row"),
            }
        }
        Ok(out.into_values().collect())
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
