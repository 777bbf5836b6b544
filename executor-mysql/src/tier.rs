//! The tier moves' read of due rows (MySQL is the seed's cold tier for long
//! delays); the SQL core moves the rows no tier can take to `ERROR` and
//! imports.

use executor_core::{Namespace, Result, Timestamp};
use executor_sql::dialect::Tier;
use sqlx::mysql::MySqlRow;

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    sql::{self, padded, sql, ts},
};

impl Tier for MySqlDialect {
    /// In two statements: the queues with waiting tasks (a loose index
    /// scan), then their ranges of `ix_queue` up to `before` (ten per
    /// queue, so only the tasks due before it are read), the first `limit`
    /// ids sorted by due time in the index alone and their rows joined by
    /// primary key.
    async fn due_rows(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<MySqlRow>> {
        let waiting = self.waiting_queues(ns).await?;
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let queues = padded(waiting.iter().map(String::as_str));
        let text = sql::slice(sql!("tier/due_before"), "queues", queues.len());
        sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &queues)
            .bind(ts(before))
            .bind(u32::try_from(limit).unwrap_or(u32::MAX))
            .bind(ns.as_str().to_owned())
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)
    }
}
