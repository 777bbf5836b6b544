//! The tier moves' read of due rows (`TieredStorage<RedisStorage,
//! PostgresStorage>`: Redis for the near future, PostgreSQL for long
//! delays); the SQL core moves the rows no tier can take to `ERROR` and
//! imports.

use executor_core::{Namespace, Result, Timestamp};
use executor_sql::dialect::Tier;
use sqlx::postgres::PgRow;

use crate::{
    PostgresDialect,
    conn::RunOn,
    error,
    sql::{sql, ts},
};

impl Tier for PostgresDialect {
    /// In one statement: the queues with waiting tasks (a skip scan of
    /// `ix_waiting`), then for each queue and priority its range of the
    /// index up to `before` (so only the tasks due before it are read),
    /// merged by due time.
    async fn due_rows(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<PgRow>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        sqlx::query(sql!("tier/due_before"))
            .bind(ns.as_str())
            .bind(ns.as_str())
            .bind(ns.as_str())
            .bind(ts(before))
            .bind(limit)
            .bind(limit)
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)
    }
}
