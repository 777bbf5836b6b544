//! The tier moves: what `TieredStorage` needs from a store that holds one
//! of its tiers (an SQL store as the cold tier for long delays). The
//! dialect reads the due rows (`Tier::due_rows`); the rest is here.

use executor_core::{Error, Namespace, Result, TaskRecord, Timestamp, storage::MAX_FENCE};

use crate::{
    Dialect,
    dialect::Tier,
    row::{self, clip_error, raw_id, to_error},
    stmt::{SqlDb, Value, fetch_optional, ms, query, ts},
};

/// Waiting tasks due before `before`, earliest first. A row no tier could
/// take (counters at their column's maximum, or fields that do not parse)
/// is moved to `ERROR` with the reason, as a claim does, so it is
/// dead-lettered instead of waiting for ever in the cold tier and stopping
/// every promotion behind it.
pub(crate) async fn due_before<D: Tier>(
    d: &D,
    ns: &Namespace,
    before: Timestamp,
    limit: usize,
) -> Result<Vec<TaskRecord>> {
    let rows = d.due_rows(ns, before, limit.min(10_000)).await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let id = raw_id(r);
        match row::task_with_log::<D>(r) {
            Ok(t) if t.attempts >= D::MAX_ATTEMPTS || t.fence >= MAX_FENCE => {
                let reason = format!(
                    "attempts {} or fence {} is past what a tier keeps (attempts below {}, fence below {MAX_FENCE})",
                    t.attempts,
                    t.fence,
                    D::MAX_ATTEMPTS
                );
                to_error(d, ns, &id, Value::OptUint(None), &reason).await?;
            }
            Ok(t) => out.push(t),
            Err(reason) => to_error(d, ns, &id, Value::OptUint(None), &reason).await?,
        }
    }
    Ok(out)
}

/// Stores `record` exactly as given unless its id exists (then `false`).
/// If its debounce key is already bound to another waiting task here, the
/// record is stored without the key (logged): the key binds one waiting
/// task per namespace, and answering `false` would let the caller delete
/// the only copy of the task from the other tier.
pub(crate) async fn import<D: Dialect>(d: &D, ns: &Namespace, record: TaskRecord) -> Result<bool> {
    let limit = d.max_payload().await?;
    if record.payload.len() > limit {
        return Err(Error::PayloadTooLarge { size: record.payload.len(), limit });
    }
    executor_core::queue::check_priority(record.priority)?;
    if record.attempts > D::MAX_ATTEMPTS || record.max_attempts > D::MAX_ATTEMPTS {
        return Err(Error::invalid("imported task", format!("attempts beyond the {} column", D::SERVER)));
    }
    D::check_import(&record)?;
    // A custom (closure) policy does not serialize and is not stored: the
    // handler's default applies to it, as for any task stored without one.
    let retry = record.retry.as_ref().and_then(|p| serde_json::to_string(p).ok());
    // The attempt log moves with the task; NULL for none, as a task that
    // never retried has.
    let log = match record.attempt_log.is_empty() {
        true => None,
        false => Some(
            serde_json::to_string(&record.attempt_log)
                .map_err(|e| Error::invalid("attempt log", format!("{e}: it cannot be moved")))?,
        ),
    };
    let last_error = record.last_error.as_deref().map(clip_error);
    let id_len = i64::try_from(record.id.as_str().len()).unwrap_or(i64::MAX);
    let mut key = record.debounce_key.as_deref();
    loop {
        let args = [
            ("ns", Value::Text(ns.as_str())),
            ("id", Value::Text(record.id.as_str())),
            ("id_len", Value::Int(id_len)),
            ("name", Value::Text(&record.name)),
            ("state", Value::Text(record.state.as_str())),
            ("payload", Value::Bytes(&record.payload)),
            ("attempts", Value::Int(i64::from(record.attempts))),
            ("max_attempts", Value::Int(i64::from(record.max_attempts))),
            ("fence", Value::Uint(record.fence)),
            ("created_at", Value::Int(ts(record.created_at))),
            ("due_at", Value::Int(ts(record.due_at))),
            ("started_at", Value::OptInt(record.started_at.map(ts))),
            ("finished_at", Value::OptInt(record.finished_at.map(ts))),
            ("deadline", Value::OptInt(record.deadline.map(ts))),
            ("timeout_ms", Value::OptInt(record.timeout.map(ms))),
            ("retry", Value::OptText(retry.as_deref())),
            ("last_error", Value::OptText(last_error.as_deref())),
            ("worker", Value::OptText(record.worker.as_ref().map(|w| w.as_str()))),
            ("lease_until", Value::OptInt(record.lease_until.map(ts))),
            ("cancel_requested", Value::Bool(record.cancel_requested)),
            ("debounce_key", Value::OptText(key)),
            ("queue", Value::Text(record.queue.as_str())),
            ("priority", Value::Int(i64::from(record.priority))),
            ("attempt_log", Value::OptText(log.as_deref())),
        ];
        let q = query::<D>(&D::SQL.tier_import, &args)?;
        match D::Db::execute(q, d.conns()).await {
            Ok(_) => {
                if record.state.is_waiting() {
                    d.work_may_be_due(ns);
                }
                return Ok(true);
            }
            Err(e) if D::is_duplicate(&e) => {
                if fetch_optional(d, &D::SQL.tier_exists, &args).await?.is_some() || key.is_none() {
                    return Ok(false);
                }
                tracing::warn!(task = %record.id, key = ?key, "debounce key already bound here; imported without it");
                key = None;
            }
            Err(e) => return Err(crate::error::storage::<D>(e)),
        }
    }
}
