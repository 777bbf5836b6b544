//! Pausing and resuming a queue, and the queue list, on every dialect.

use std::collections::BTreeMap;

use executor_core::{
    Namespace, QueueName, Result, Timestamp,
    queue::{QueueInfo, QueueLimits},
};

use crate::{
    Dialect,
    dialect::Queues,
    row::queue_name,
    stmt::{Cols, Value, execute, fetch_all},
};

/// Sets `queue`'s limits; [`QueueLimits::new`] removes them, and the row
/// with them unless the queue is paused (a queue without limits is claimed
/// the plain way again). Either way claimers are told: a raised or removed
/// limit may let them take more.
pub(crate) async fn set_limits<D: Dialect + Queues>(
    d: &D,
    ns: &Namespace,
    queue: &QueueName,
    limits: &QueueLimits,
) -> Result<()> {
    limits.validate()?;
    if !limits.is_none() {
        return d.set_limits(ns, queue, limits).await;
    }
    let args = [("ns", Value::Text(ns.as_str())), ("queue", Value::Text(queue.as_str()))];
    execute(d, &D::SQL.limits_delete_unlimited, &args).await?;
    execute(d, &D::SQL.limits_clear, &args).await?;
    d.limited().forget(ns, queue);
    d.announce_work(ns).await
}

/// The waiting tasks of one queue, as a dialect reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitingFigures {
    /// The queue's name as stored (checked by the SQL core).
    pub queue: String,
    /// Waiting tasks.
    pub waiting: u64,
    /// Of them, due now.
    pub due: u64,
    /// The earliest due time among them.
    pub oldest_due: Option<Timestamp>,
}

/// The waiting figures of `rows`, each with the columns `queue`,
/// `waiting`, `due` (NULL as 0) and `oldest_due`.
///
/// # Errors
/// A column is missing or of another type.
pub fn waiting_figures<R: Cols>(rows: &[R]) -> Result<Vec<WaitingFigures>> {
    let bad = |reason: String| executor_core::Error::storage(std::io::Error::other(reason), false);
    let count = |v: i64| u64::try_from(v).unwrap_or(0);
    rows.iter()
        .map(|r| {
            Ok(WaitingFigures {
                queue: r.text("queue").map_err(bad)?,
                waiting: count(r.int("waiting").map_err(bad)?),
                due: r.opt_int("due").map_err(bad)?.map_or(0, count),
                oldest_due: r
                    .opt_int("oldest_due")
                    .map_err(bad)?
                    .and_then(|t| u64::try_from(t).ok())
                    .map(Timestamp::from_millis),
            })
        })
        .collect()
}

/// Every queue with waiting or running tasks, paused or with limits, by
/// name: the dialect's waiting figures, the running tasks per queue, the
/// rows of the queues table (paused, limits, throttled). A name that is
/// not a valid queue name (a hand-edited row) is left out and logged.
pub(crate) async fn list<D: Dialect + Queues>(d: &D, ns: &Namespace) -> Result<Vec<QueueInfo>> {
    let mut out: BTreeMap<QueueName, QueueInfo> = BTreeMap::new();
    for f in d.waiting_figures(ns).await? {
        let Some(queue) = queue_name(&f.queue) else { continue };
        let info = out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue));
        info.waiting += f.waiting;
        info.due += f.due;
        info.oldest_due = match (info.oldest_due, f.oldest_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    let corrupt = |reason: String| executor_core::Error::storage(std::io::Error::other(reason), false);
    for r in fetch_all(d, &D::SQL.queues_running, &[("ns", Value::Text(ns.as_str()))]).await? {
        let Some(queue) = queue_name(&r.text("queue").map_err(corrupt)?) else { continue };
        let running = u64::try_from(r.int("running").map_err(corrupt)?).unwrap_or(0);
        out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue)).running = running;
    }
    for (name, stored) in d.stored_queues(ns).await? {
        let Some(queue) = queue_name(&name) else { continue };
        if !stored.paused && !stored.has_limits() {
            // A row left by a resume racing a clear: nothing to show.
            continue;
        }
        let info = out.entry(queue.clone()).or_insert_with(|| QueueInfo::new(queue));
        info.paused = stored.paused;
        info.limits = stored.shown();
        info.throttled = stored.throttled;
    }
    Ok(out.into_values().collect())
}

/// Pauses or resumes `queue`: a row in the queues table while it is paused
/// or has limits, none otherwise. Every claim statement reads it, so a
/// pause holds for every process from the next claim on. Resuming deletes
/// a row that holds no limits and clears the flag of one that does, then
/// announces the work the pause held back ([`Dialect::announce_work`]).
pub(crate) async fn pause<D: Dialect>(d: &D, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
    let args = [("ns", Value::Text(ns.as_str())), ("queue", Value::Text(queue.as_str()))];
    if paused {
        execute(d, &D::SQL.queues_pause, &args).await?;
        return Ok(());
    }
    execute(d, &D::SQL.queues_resume_delete, &args).await?;
    execute(d, &D::SQL.queues_resume, &args).await?;
    d.announce_work(ns).await
}
