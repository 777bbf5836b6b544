//! The schema every dialect checks, the purge of a namespace and the
//! counts per state, on every dialect.

use executor_core::{Error, Namespace, Result, query::StateCounts};

use crate::{
    Dialect,
    row::exact_state,
    stmt::{Cols, SqlDb, Statement, Value, execute, fetch_all},
};

/// Checks that every table and column the statements use exists: one
/// `SELECT ... LIMIT 0` per table. The options' `open` runs it when
/// migrations are off, and each dialect's `migrate` after migrating.
///
/// # Errors
/// A missing table or column (not retryable: run the migrations); store
/// failures.
pub async fn check<D: Dialect>(d: &D) -> Result<()> {
    let sql = &D::SQL;
    for probe in [
        &sql.probe_tasks,
        &sql.probe_leaders,
        &sql.probe_workers,
        &sql.probe_queues,
        &sql.probe_schedules,
        &sql.probe_history,
    ] {
        if let Err(e) = D::Db::fetch_all(sqlx::query::<D::Db>(probe.text), d.conns()).await {
            if D::is_missing_schema(&e) {
                return Err(Error::storage(
                    std::io::Error::other(format!(
                        "the executor's schema is incomplete ({e}): run the migrations (the options' \
                         run_migrations(true)) or apply {}/*.sql in order",
                        D::MIGRATIONS_DIR
                    )),
                    false,
                ));
            }
            return Err(crate::error::storage::<D>(e));
        }
    }
    Ok(())
}

/// Deletes every task, the leadership row, the workers' announcements, the
/// cron schedules, the queue rows and the throughput history of `ns`, tasks
/// in batches of 10,000 rows so no statement holds locks for long. Returns
/// the number of tasks deleted.
pub(crate) async fn purge<D: Dialect>(d: &D, ns: &Namespace) -> Result<u64> {
    let args = [("ns", Value::Text(ns.as_str()))];
    let mut deleted = 0;
    loop {
        let done = execute(d, &D::SQL.purge_tasks, &args).await?;
        deleted += done;
        if done == 0 {
            break;
        }
    }
    let sql = &D::SQL;
    let rest: [&Statement; 5] =
        [&sql.purge_leaders, &sql.purge_workers, &sql.purge_schedules, &sql.purge_queues, &sql.purge_history];
    for table in rest {
        execute(d, table, &args).await?;
    }
    Ok(deleted)
}

/// Tasks per state, from the `ix_finished` index alone. Rows with a state
/// no one knows are left out (and logged).
pub(crate) async fn counts<D: Dialect>(d: &D, ns: &Namespace) -> Result<StateCounts> {
    let rows = fetch_all(d, &D::SQL.query_counts, &[("ns", Value::Text(ns.as_str()))]).await?;
    let bad = |reason: String| Error::storage(std::io::Error::other(format!("counts: {reason}")), false);
    let mut out = std::collections::BTreeMap::new();
    for r in rows {
        let state = r.text("state").map_err(bad)?;
        let n = r.int("n").map_err(bad)?;
        match exact_state(&state) {
            Ok(st) => {
                out.insert(st, u64::try_from(n).unwrap_or(0));
            }
            Err(_) => tracing::warn!(%state, n, "tasks with an unknown state left out of the counts"),
        }
    }
    Ok(out.into_iter().collect())
}
