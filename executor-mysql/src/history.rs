//! Adding to the throughput history: one row per (namespace, minute, task
//! name) in `reliable_executor_history`, the minute taken from the server's
//! `NOW(3)`. An add is one autocommit upsert for every name, so adds from
//! many processes sum; the reads and the leader's trim are the SQL core's.

use executor_core::{
    Namespace, Result,
    storage::{HistoryCount, check_history},
};
use executor_sql::dialect::History;

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    sql::{self, sql},
};

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
}
