//! The tier methods: what `TieredStorage` needs from a store that holds
//! one of its tiers (MySQL is the seed's cold tier for long delays).

use executor_core::{Error, Namespace, Result, TaskId, TaskRecord, Timestamp, storage::MAX_FENCE};
use executor_sql::Dialect as _;
use executor_sql::dialect::Tier;

use crate::{
    MySqlDialect,
    conn::RunOn,
    error, row,
    sql::{
        self, ID_COLUMN_CHARS, MAX_ATTEMPTS_COLUMN, NAME_COLUMN_CHARS, bind_task, clip_error, ms, padded,
        sql, ts,
    },
};

async fn exists(s: &MySqlDialect, ns: &Namespace, id: &TaskId) -> Result<bool> {
    let q = sqlx::query(sql!("tier/exists"));
    let r = bind_task(q, ns, id).fetch_optional_on(&s.conns).await.map_err(error::storage)?;
    Ok(r.is_some())
}

impl Tier for MySqlDialect {
    /// Waiting tasks due before `before`, earliest first, in two
    /// statements: the queues with waiting tasks (a loose index scan), then
    /// their ranges of `ix_queue` up to `before` (ten per queue, so only
    /// the tasks due before it are read), the first `limit` ids sorted by
    /// due time in the index alone and their rows joined by primary key.
    /// Rows that do not parse are left out (and logged) rather than stopping
    /// every promotion behind them.
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        let waiting = self.waiting_queues(ns).await?;
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        let queues = padded(waiting.iter().map(String::as_str));
        let text = sql::slice(sql!("tier/due_before"), "queues", queues.len());
        let q = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &queues)
            .bind(ts(before))
            .bind(u32::try_from(limit.min(10_000)).unwrap_or(10_000))
            .bind(ns.as_str().to_owned());
        let rows = q.fetch_all_on(&self.conns).await.map_err(error::storage)?;
        // A row no tier could take (counters at their column's maximum, or
        // fields that do not parse) is moved to ERROR with the reason, as
        // claim does, so it is dead-lettered instead of waiting for ever in
        // the cold tier (bad input never stops the runtime).
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let id = row::raw_id(r);
            match row::task_with_log(r) {
                Ok(t) if t.attempts == MAX_ATTEMPTS_COLUMN || t.fence >= MAX_FENCE => {
                    let reason = format!(
                        "attempts {} or fence {} is past what a tier keeps (attempts below {}, fence below {MAX_FENCE})",
                        t.attempts, t.fence, MAX_ATTEMPTS_COLUMN
                    );
                    crate::claim::to_error(self, ns, &id, None, &reason).await?;
                }
                Ok(t) => out.push(t),
                Err(reason) => crate::claim::to_error(self, ns, &id, None, &reason).await?,
            }
        }
        Ok(out)
    }

    /// Stores `record` exactly as given unless its id exists (then `false`).
    /// If its debounce key is already bound to another waiting task here, the
    /// record is stored without the key (logged): the key binds one waiting
    /// task per namespace, and answering `false` would let the caller delete
    /// the only copy of the task from the other tier.
    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        let limit = self.max_payload().await?;
        if record.payload.len() > limit {
            return Err(Error::PayloadTooLarge { size: record.payload.len(), limit });
        }
        executor_core::queue::check_priority(record.priority)?;
        if record.name.chars().count() > NAME_COLUMN_CHARS
            || record.debounce_key.as_ref().is_some_and(|k| k.chars().count() > ID_COLUMN_CHARS)
        {
            return Err(Error::invalid(
                "imported task",
                "name or debounce key longer than the MySQL columns",
            ));
        }
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
        let mut key = record.debounce_key.clone();
        loop {
            let done = sqlx::query(sql!("tier/import"))
                .bind(ns.as_str())
                .bind(record.id.as_str())
                .bind(&record.name)
                .bind(record.state.as_str())
                .bind(&record.payload)
                .bind(record.attempts)
                .bind(record.max_attempts)
                .bind(record.fence)
                .bind(ts(record.created_at))
                .bind(ts(record.due_at))
                .bind(record.started_at.map(ts))
                .bind(record.finished_at.map(ts))
                .bind(record.deadline.map(ts))
                .bind(record.timeout.map(ms))
                .bind(&retry)
                .bind(record.last_error.as_deref().map(|e| clip_error(e).into_owned()))
                .bind(record.worker.as_ref().map(|w| w.as_str()))
                .bind(record.lease_until.map(ts))
                .bind(record.cancel_requested)
                .bind(&key)
                .bind(record.queue.as_str())
                .bind(record.priority)
                .bind(&log)
                .execute_on(&self.conns)
                .await;
            match done {
                Ok(_) => {
                    if record.state.is_waiting() {
                        self.notify_work();
                    }
                    return Ok(true);
                }
                Err(e) if error::is_duplicate(&e) => {
                    if exists(self, ns, &record.id).await? || key.is_none() {
                        return Ok(false);
                    }
                    tracing::warn!(task = %record.id, key = ?key, "debounce key already bound here; imported without it");
                    key = None;
                }
                Err(e) => return Err(error::storage(e)),
            }
        }
    }
}
