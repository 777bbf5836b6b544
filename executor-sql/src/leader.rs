//! Leadership of a namespace's housekeeping (one row per namespace holding
//! the leader, its fencing token and the end of its term) and the workers'
//! announcements the leader compares (one row per worker), on every
//! dialect. Every statement is autocommit and decides on the server's
//! clock; none waits for the client while it holds a lock, so a process
//! stopped between two of them holds nothing the others need.

use std::time::Duration;

use executor_core::{Error, Namespace, Result, Timestamp, WorkerId, query::WorkerInfo, storage::Leadership};
use sqlx::Database;

use crate::{
    Dialect,
    error::retry_lock_conflicts,
    stmt::{Cols, Value, execute, fetch_all, fetch_optional, ms},
};

/// Takes the term if it is free or expired (token + 1), renews it if
/// `worker` already holds it (same token), else `None`. One upsert decides;
/// a dialect whose upsert cannot return the row (MySQL) reads it after.
/// Should the term change hands in between (only after a pause longer than
/// the term), the read shows the new holder and this worker is told it
/// does not lead.
pub(crate) async fn acquire<D: Dialect>(
    d: &D,
    ns: &Namespace,
    worker: &WorkerId,
    ttl: Duration,
) -> Result<Option<Leadership>> {
    let args = [
        ("ns", Value::Text(ns.as_str())),
        ("worker", Value::Text(worker.as_str())),
        ("term_ms", Value::Int(ms(ttl))),
    ];
    let args = &args;
    retry_lock_conflicts::<D, _, _, _>(<D as crate::ErrorClass>::LOCK_RETRIES, || async move {
        let row = match fetch_optional(d, &D::SQL.leader_acquire, args).await? {
            Some(row) => row,
            None => match fetch_optional(d, &D::SQL.leader_read_term, args).await? {
                Some(row) => row,
                None => return Ok(None),
            },
        };
        match term::<D>(&row)? {
            t if &t.worker == worker => Ok(Some(t)),
            _ => Ok(None),
        }
    })
    .await
}

/// Ends the term early if `term` still holds it; the row stays so the next
/// term's token is larger.
pub(crate) async fn release<D: Dialect>(d: &D, ns: &Namespace, term: &Leadership) -> Result<()> {
    let args = [
        ("ns", Value::Text(ns.as_str())),
        ("worker", Value::Text(term.worker.as_str())),
        ("token", Value::Uint(term.token)),
    ];
    execute(d, &D::SQL.leader_release, &args).await.map(drop)
}

/// The unexpired term, if any.
pub(crate) async fn current<D: Dialect>(d: &D, ns: &Namespace) -> Result<Option<Leadership>> {
    let row = fetch_optional(d, &D::SQL.leader_current, &[("ns", Value::Text(ns.as_str()))]).await?;
    row.map(|r| term::<D>(&r)).transpose()
}

fn term<D: Dialect>(r: &<D::Db as Database>::Row) -> Result<Leadership> {
    let bad =
        |reason: String| Error::storage(std::io::Error::other(format!("leadership row: {reason}")), false);
    let worker = r.text("worker").map_err(bad)?;
    let until = r.int("until_ms").map_err(bad)?;
    Ok(Leadership::new(
        WorkerId::new(worker)?,
        D::uint(r, "token").map_err(bad)?,
        Timestamp::from_millis(u64::try_from(until).unwrap_or(0)),
    ))
}

/// Upserts `worker`'s row: its names and `now + ttl` on the server's clock.
pub(crate) async fn announce<D: Dialect>(
    d: &D,
    ns: &Namespace,
    worker: &WorkerId,
    names: &[String],
    ttl: Duration,
) -> Result<()> {
    executor_core::storage::check_duration("announce ttl", ttl)?;
    let names = serde_json::to_string(names).map_err(|e| Error::invalid("handler names", e.to_string()))?;
    let args = [
        ("ns", Value::Text(ns.as_str())),
        ("worker", Value::Text(worker.as_str())),
        ("names", Value::Text(&names)),
        ("ttl_ms", Value::Int(ms(ttl))),
    ];
    let args = &args;
    retry_lock_conflicts::<D, _, _, _>(<D as crate::ErrorClass>::LOCK_RETRIES, || async move {
        execute(d, &D::SQL.leader_announce, args).await
    })
    .await
    .map(drop)
}

/// Deletes the lapsed rows of `ns`, then reads the others; a row that does
/// not parse is left out.
pub(crate) async fn workers<D: Dialect>(d: &D, ns: &Namespace) -> Result<Vec<WorkerInfo>> {
    let args = [("ns", Value::Text(ns.as_str()))];
    execute(d, &D::SQL.leader_delete_lapsed_workers, &args).await?;
    let rows = fetch_all(d, &D::SQL.leader_workers, &args).await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let worker = WorkerId::new(r.text("worker").ok()?).ok()?;
            let names: Vec<String> = serde_json::from_str(&r.text("names").ok()?).ok()?;
            let until = u64::try_from(r.int("until_ms").ok()?).ok()?;
            Some(WorkerInfo::new(worker, names, Timestamp::from_millis(until)))
        })
        .collect())
}

/// The server's clock.
pub(crate) async fn now<D: Dialect>(d: &D) -> Result<Timestamp> {
    let Some(r) = fetch_optional(d, &D::SQL.now, &[]).await? else {
        return Err(Error::storage(std::io::Error::other("the server's clock answered no row"), true));
    };
    let now = r.int("now_ms").map_err(|reason| Error::storage(std::io::Error::other(reason), false))?;
    Ok(Timestamp::from_millis(u64::try_from(now).unwrap_or(0)))
}
