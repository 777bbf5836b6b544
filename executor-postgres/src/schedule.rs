//! Cron schedules: one row per (namespace, name) holding the definition as
//! JSON and the leader's progress through it (paused, cursor, fence, last
//! task). "Whether it existed / moved" is the number of rows the `WHERE`
//! matched (PostgreSQL counts matched rows, changed or not).

use executor_core::{
    Error, Namespace, Result, TaskId, Timestamp,
    schedule::Schedule,
    storage::{Advance, ScheduleEntry},
};
use executor_sql::Dialect as _;
use executor_sql::dialect::Schedules;
use sqlx::postgres::PgRow;

use crate::{PostgresDialect, conn::RunOn, error, row::col, sql::sql};

/// One row as an entry, or why it is not one.
fn entry(r: &PgRow) -> Result<ScheduleEntry, String> {
    let name: String = col(r, "name")?;
    let definition: String = col(r, "definition")?;
    let schedule: Schedule =
        serde_json::from_str(&definition).map_err(|e| format!("the definition is not a schedule: {e}"))?;
    // The leader moves the row named in the definition: one naming another
    // schedule would move that one's cursor.
    if schedule.name != name {
        return Err(format!("the definition is named `{}`", schedule.name));
    }
    let cursor: i64 = col(r, "cursor_ms")?;
    let cursor = u64::try_from(cursor).map_err(|_| format!("column `cursor_ms` is negative: {cursor}"))?;
    let mut e = ScheduleEntry::new(schedule, Timestamp::from_millis(cursor));
    e.paused = col(r, "paused")?;
    let fence: i64 = col(r, "fence")?;
    e.fence = u64::try_from(fence).map_err(|_| format!("column `fence` is negative: {fence}"))?;
    e.last_task = col::<_, Option<String>>(r, "last_task")?
        .map(TaskId::new)
        .transpose()
        .map_err(|e| format!("column `last_task`: {e}"))?;
    Ok(e)
}

impl Schedules for PostgresDialect {
    /// Inserts `schedule` with its cursor at the server's now, or replaces
    /// only the definition of the row already there, so a replaced schedule
    /// keeps its pause, cursor, fence and last task. One autocommit upsert.
    async fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> Result<()> {
        let definition =
            serde_json::to_string(schedule).map_err(|e| Error::invalid("schedule", e.to_string()))?;
        // The payload inside is escaped, so the definition can outgrow the
        // payload limit the caller checked.
        let limit = self.max_payload().await?;
        if definition.len() > limit {
            return Err(Error::PayloadTooLarge { size: definition.len(), limit });
        }
        error::retry_lock_conflicts(|| async {
            sqlx::query(sql!("schedule/put"))
                .bind(ns.as_str())
                .bind(schedule.name.as_str())
                .bind(definition.as_str())
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await
        .map(drop)
    }

    /// Every schedule of `ns`, by name. A row that does not read back as a
    /// schedule (hand-edited JSON, a definition naming another schedule, a
    /// bad last task) is left out with a warning, so one bad row does not
    /// stop every other schedule from firing.
    async fn schedules(&self, ns: &Namespace) -> Result<Vec<ScheduleEntry>> {
        let rows = sqlx::query(sql!("schedule/all"))
            .bind(ns.as_str())
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        Ok(rows
            .iter()
            .filter_map(|r| match entry(r) {
                Ok(e) => Some(e),
                Err(reason) => {
                    let name = col::<_, String>(r, "name").unwrap_or_default();
                    tracing::warn!(namespace = %ns, schedule = %name, %reason, "stored schedule does not parse; left out");
                    None
                }
            })
            .collect())
    }

    /// Deletes schedule `name`; whether it existed.
    async fn remove_schedule(&self, ns: &Namespace, name: &str) -> Result<bool> {
        let done = error::retry_lock_conflicts(|| async {
            sqlx::query(sql!("schedule/remove"))
                .bind(ns.as_str())
                .bind(name)
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Sets the pause flag of schedule `name` and nothing else; whether it
    /// exists (matched rows, see the module docs: pausing a paused one is
    /// `true`).
    async fn pause_schedule(&self, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
        let done = error::retry_lock_conflicts(|| async {
            sqlx::query(sql!("schedule/pause"))
                .bind(paused)
                .bind(ns.as_str())
                .bind(name)
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// [`Advance::applies_to`] and [`Advance::apply`] as one conditional
    /// UPDATE: the row lock serialises concurrent moves, and each re-reads
    /// the committed cursor, so of several moves from one cursor exactly
    /// one matches. A move without a task keeps the stored last task.
    async fn advance_schedule(&self, ns: &Namespace, name: &str, advance: &Advance) -> Result<bool> {
        let task = advance.task.as_ref().map(TaskId::as_str);
        let done = error::retry_lock_conflicts(|| async {
            sqlx::query(sql!("schedule/advance"))
                .bind(crate::sql::ts(advance.to))
                .bind(crate::sql::big(advance.token))
                .bind(task)
                .bind(ns.as_str())
                .bind(name)
                .bind(crate::sql::ts(advance.from))
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
