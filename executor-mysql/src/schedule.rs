//! Cron schedules: one row per (namespace, name) holding the definition as
//! JSON and the leader's progress through it (paused, cursor, fence, last
//! task).
//!
//! The statements that answer "whether it existed / moved" count the rows
//! their `WHERE` matched, not the rows whose values changed: sqlx always
//! connects with `CLIENT_FOUND_ROWS`, so pausing a paused schedule, or a
//! move that leaves every value as it was, still counts its row. The
//! driver test `schedules::unchanged_rows_still_count` holds sqlx to that.

use executor_core::{
    Error, Namespace, Result, TaskId, Timestamp,
    schedule::Schedule,
    storage::{Advance, ScheduleEntry},
};
use executor_sql::Dialect as _;
use executor_sql::dialect::Schedules;
use sqlx::mysql::MySqlRow;

use crate::{MySqlDialect, conn::RunOn, error, row::col, sql::sql};

/// The byte length `LENGTH(name)` is compared with: the `_bin` collations
/// pad with spaces, so `name = 'a'` alone would also match a row named
/// `'a '`.
fn name_len(name: &str) -> u32 {
    u32::try_from(name.len()).unwrap_or(u32::MAX)
}

/// One row as an entry, or why it is not one.
fn entry(r: &MySqlRow) -> Result<ScheduleEntry, String> {
    let name: String = col(r, "name")?;
    let definition: String = col(r, "definition")?;
    let schedule: Schedule =
        serde_json::from_str(&definition).map_err(|e| format!("the definition is not a schedule: {e}"))?;
    // The leader moves the row named in the definition: one naming another
    // schedule would move that one's cursor.
    if schedule.name != name {
        return Err(format!("the definition is named `{}`", schedule.name));
    }
    let mut e = ScheduleEntry::new(schedule, Timestamp::from_millis(col(r, "cursor_ms")?));
    e.paused = col(r, "paused")?;
    e.fence = col(r, "fence")?;
    e.last_task = col::<_, Option<String>>(r, "last_task")?
        .map(TaskId::new)
        .transpose()
        .map_err(|e| format!("column `last_task`: {e}"))?;
    Ok(e)
}

impl Schedules for MySqlDialect {
    /// Inserts `schedule` with its cursor at the server's now, or replaces
    /// only the definition of the row already there, so a replaced schedule
    /// keeps its pause, cursor, fence and last task. One autocommit upsert.
    async fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> Result<()> {
        let definition =
            serde_json::to_string(schedule).map_err(|e| Error::invalid("schedule", e.to_string()))?;
        // The payload inside is escaped, so the definition can outgrow the
        // payload limit the caller checked; a statement over
        // max_allowed_packet makes the server drop the connection, which
        // would look retryable.
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
                .bind(name_len(name))
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
                .bind(name_len(name))
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
                .bind(advance.to.as_millis())
                .bind(advance.token)
                .bind(task)
                .bind(ns.as_str())
                .bind(name)
                .bind(name_len(name))
                .bind(advance.from.as_millis())
                .bind(advance.token)
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
