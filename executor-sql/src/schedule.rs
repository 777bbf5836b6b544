//! Cron schedules, on every dialect: one row per (namespace, name) holding
//! the definition as JSON and the leader's progress through it (paused,
//! cursor, fence, last task). Every statement is one autocommit statement.
//!
//! The statements that answer "whether it existed / moved" count the rows
//! their `WHERE` matched, not the rows whose values changed (PostgreSQL
//! counts so; sqlx connects to MySQL with `CLIENT_FOUND_ROWS`), so pausing a
//! paused schedule, or a move that leaves every value as it was, still
//! counts its row. MySQL's `_bin` collations pad with spaces, so its
//! statements also compare the name's length in bytes (`name_len`).

use executor_core::{
    Error, Namespace, Result, TaskId, Timestamp,
    schedule::Schedule,
    storage::{Advance, ScheduleEntry},
};
use sqlx::Database;

use crate::{
    Dialect,
    error::retry_lock_conflicts,
    stmt::{Arg, Cols, Statement, Value, execute, fetch_all},
};

/// One row as an entry, or why it is not one.
fn entry<D: Dialect>(r: &<D::Db as Database>::Row) -> std::result::Result<ScheduleEntry, String> {
    let name = r.text("name")?;
    let definition = r.text("definition")?;
    let schedule: Schedule =
        serde_json::from_str(&definition).map_err(|e| format!("the definition is not a schedule: {e}"))?;
    // The leader moves the row named in the definition: one naming another
    // schedule would move that one's cursor.
    if schedule.name != name {
        return Err(format!("the definition is named `{}`", schedule.name));
    }
    let mut e = ScheduleEntry::new(schedule, Timestamp::from_millis(D::uint(r, "cursor_ms")?));
    e.paused = r.flag("paused")?;
    e.fence = D::uint(r, "fence")?;
    e.last_task = r
        .opt_text("last_task")?
        .map(TaskId::new)
        .transpose()
        .map_err(|e| format!("column `last_task`: {e}"))?;
    Ok(e)
}

/// The byte length of a name, for the dialects that compare it.
fn name_len(name: &str) -> i64 {
    i64::try_from(name.len()).unwrap_or(i64::MAX)
}

/// Runs a statement that changes one schedule, retrying lock conflicts;
/// returns the rows it matched.
async fn change<D: Dialect>(d: &D, statement: &Statement, args: &[Arg<'_>]) -> Result<u64> {
    retry_lock_conflicts::<D, _, _, _>(D::LOCK_RETRIES, || execute(d, statement, args)).await
}

/// Inserts `schedule` with its cursor at the server's now, or replaces only
/// the definition of the row already there, so a replaced schedule keeps
/// its pause, cursor, fence and last task.
pub(crate) async fn put<D: Dialect>(d: &D, ns: &Namespace, schedule: &Schedule) -> Result<()> {
    let definition =
        serde_json::to_string(schedule).map_err(|e| Error::invalid("schedule", e.to_string()))?;
    // The payload inside is escaped, so the definition can outgrow the
    // payload limit the caller checked; on MySQL a statement over
    // max_allowed_packet makes the server drop the connection, which would
    // look retryable.
    let limit = d.max_payload().await?;
    if definition.len() > limit {
        return Err(Error::PayloadTooLarge { size: definition.len(), limit });
    }
    let args = [
        ("ns", Value::Text(ns.as_str())),
        ("name", Value::Text(schedule.name.as_str())),
        ("definition", Value::Text(&definition)),
    ];
    change(d, &D::SQL.schedule_put, &args).await.map(drop)
}

/// Every schedule of `ns`, by name. A row that does not read back as a
/// schedule (hand-edited JSON, a definition naming another schedule, a bad
/// last task) is left out with a warning, so one bad row does not stop
/// every other schedule from firing.
pub(crate) async fn all<D: Dialect>(d: &D, ns: &Namespace) -> Result<Vec<ScheduleEntry>> {
    let rows = fetch_all(d, &D::SQL.schedule_all, &[("ns", Value::Text(ns.as_str()))]).await?;
    Ok(rows
        .iter()
        .filter_map(|r| match entry::<D>(r) {
            Ok(e) => Some(e),
            Err(reason) => {
                let name = r.text("name").unwrap_or_default();
                tracing::warn!(namespace = %ns, schedule = %name, %reason, "stored schedule does not parse; left out");
                None
            }
        })
        .collect())
}

/// Deletes schedule `name`; whether it existed.
pub(crate) async fn remove<D: Dialect>(d: &D, ns: &Namespace, name: &str) -> Result<bool> {
    let args = [
        ("ns", Value::Text(ns.as_str())),
        ("name", Value::Text(name)),
        ("name_len", Value::Int(name_len(name))),
    ];
    Ok(change(d, &D::SQL.schedule_remove, &args).await? > 0)
}

/// Sets the pause flag of schedule `name` and nothing else; whether it
/// exists (pausing a paused one is `true`).
pub(crate) async fn pause<D: Dialect>(d: &D, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
    let args = [
        ("paused", Value::Bool(paused)),
        ("ns", Value::Text(ns.as_str())),
        ("name", Value::Text(name)),
        ("name_len", Value::Int(name_len(name))),
    ];
    Ok(change(d, &D::SQL.schedule_pause, &args).await? > 0)
}

/// [`Advance::applies_to`] and [`Advance::apply`] as one conditional
/// UPDATE: the row lock serialises concurrent moves, and each re-reads the
/// committed cursor, so of several moves from one cursor exactly one
/// matches. A move without a task keeps the stored last task.
pub(crate) async fn advance<D: Dialect>(
    d: &D,
    ns: &Namespace,
    name: &str,
    advance: &Advance,
) -> Result<bool> {
    let args = [
        ("to_ms", Value::Uint(advance.to.as_millis())),
        ("token", Value::Uint(advance.token)),
        ("task", Value::OptText(advance.task.as_ref().map(TaskId::as_str))),
        ("ns", Value::Text(ns.as_str())),
        ("name", Value::Text(name)),
        ("name_len", Value::Int(name_len(name))),
        ("from_ms", Value::Uint(advance.from.as_millis())),
    ];
    Ok(change(d, &D::SQL.schedule_advance, &args).await? == 1)
}
