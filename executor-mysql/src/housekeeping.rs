//! Leader-only housekeeping: recovering expired leases and trimming
//! finished tasks, both in bounded batches.

use executor_core::{Namespace, Result, TaskState, query::Retention, storage::Reaped};
use executor_sql::dialect::Housekeeping;
use executor_sql::row;
use sqlx::Row;

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    sql::{self, MAX_FENCE_COLUMN, ms, padded, sql},
};

/// The reason a reaped task records; `sql/housekeeping/reap.sql` holds it
/// as a literal too, for the attempt log (a test keeps the two equal).
const REAP_REASON: &str = "lease expired (worker presumed dead)";

/// Lock conflicts housekeeping runs again before leaving the rest to its
/// next tick: a row a foreign transaction holds costs it at most two lock
/// waits (2 s each), and no heartbeat or finish waits behind it meanwhile.
const HOUSEKEEPING_RETRIES: u32 = 1;

async fn reap_once(s: &MySqlDialect, ns: &Namespace, limit: u32) -> Result<Reaped> {
    let rows = sqlx::query(sql!("housekeeping/select_expired"))
        .bind(ns.as_str())
        .bind(limit)
        .fetch_all_on(&s.conns)
        .await
        .map_err(error::storage)?;
    let mut ids = Vec::with_capacity(rows.len());
    let mut stuck = Vec::new();
    for r in &rows {
        let fence: u64 = r.try_get("fence").map_err(error::storage)?;
        if fence == MAX_FENCE_COLUMN { stuck.push(row::raw_id(r)) } else { ids.push(row::raw_id(r)) }
    }
    for id in &stuck {
        to_error(s, ns, id).await?;
    }
    if ids.is_empty() {
        return Ok(Reaped::default());
    }
    let token = sql::token();
    let ids = padded(ids.iter().map(String::as_str));
    let text = sql::slice(sql!("housekeeping/reap"), "ids", ids.len());
    let q = sql::query(text).bind(REAP_REASON).bind(token).bind(ns.as_str().to_owned());
    let q = sql::bind_all(q, &ids).bind(MAX_FENCE_COLUMN);
    let changed = q.execute_on(&s.conns).await.map_err(error::storage)?.rows_affected();
    if changed == 0 {
        return Ok(Reaped::default());
    }
    let text = sql::slice(sql!("housekeeping/read_reaped"), "ids", ids.len());
    let q = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &ids).bind(token);
    let rows = q.fetch_all_on(&s.conns).await.map_err(error::storage)?;
    let mut reaped = Reaped::default();
    for r in &rows {
        let id = row::id_for_error(&row::raw_id(r));
        let state: String = r.try_get("state").map_err(error::storage)?;
        match row::exact_state(&state) {
            Ok(TaskState::Failed) => reaped.failed.push(id),
            Ok(TaskState::Timeout) => reaped.timed_out.push(id),
            // PENDING, or moved on since (claimed again, cancelled).
            _ => reaped.retried.push(id),
        }
    }
    Ok(reaped)
}

/// A running row whose fence is at its column's maximum cannot be reaped
/// (the bump overflows): it goes to `ERROR` with the reason instead.
async fn to_error(s: &MySqlDialect, ns: &Namespace, raw_id: &str) -> Result<()> {
    tracing::warn!(task = %raw_id, "running task with its fence at the column's maximum moved to ERROR");
    sqlx::query(sql!("housekeeping/fence_to_error"))
        .bind(ns.as_str())
        .bind(raw_id)
        .bind(u32::try_from(raw_id.len()).unwrap_or(u32::MAX))
        .execute_on(&s.conns)
        .await
        .map_err(error::storage)?;
    Ok(())
}

/// What a class of finished tasks keeps: those finished within `age_ms`
/// (`None`: any age) and among the newest `max` (`None`: any number).
#[derive(Clone, Copy)]
struct Keep {
    age_ms: Option<i64>,
    max: Option<u64>,
}

/// The `finished_at` of the newest task past the newest `max` of the class:
/// that task and every older one are over the count. Each state of the
/// class walks at most `max + 1` entries of `ix_finished` backwards (named:
/// with the states as an `IN` list and one `ORDER BY`, MariaDB scanned the
/// namespace by primary key and sorted it, 220,000 rows read for a
/// namespace of 220,000), and the server picks from those.
async fn count_cutoff(s: &MySqlDialect, ns: &Namespace, states: &[&str], max: u64) -> Result<Option<i64>> {
    let mut q = sql::query(sql::union(sql!("housekeeping/count_cutoff"), "states", states.len()));
    for state in states {
        q = q.bind(ns.as_str().to_owned()).bind(*state).bind(max.saturating_add(1));
    }
    let row = q.bind(max).fetch_optional_on(&s.conns).await.map_err(error::storage)?;
    row.map(|r| r.try_get::<i64, _>("finished_at")).transpose().map_err(error::storage)
}

/// Deletes up to `limit` tasks of a class past its age or its count (ties
/// at the count's millisecond go together: at most `max` stay).
async fn trim_class(
    s: &MySqlDialect,
    ns: &Namespace,
    states: &[&str],
    keep: Keep,
    limit: usize,
) -> Result<usize> {
    // The class's states, constants of this file, as SQL literals.
    let in_list = states.iter().map(|st| format!("'{st}'")).collect::<Vec<_>>().join(", ");
    let by_count = match keep.max {
        Some(max) => count_cutoff(s, ns, states, max).await?,
        None => None,
    };
    if keep.age_ms.is_none() && by_count.is_none() {
        return Ok(0);
    }
    // `ix_finished` named (see the file).
    let mut on = Vec::new();
    if keep.age_ms.is_some() {
        on.push("age");
    }
    if by_count.is_some() {
        on.push("count");
    }
    let text = sql::literals(&sql::only(sql!("housekeeping/select_trimmable"), &on), "states", &in_list);
    let mut q = sql::query(text).bind(ns.as_str().to_owned());
    if let Some(age) = keep.age_ms {
        q = q.bind(age);
    }
    if let Some(cut) = by_count {
        q = q.bind(cut);
    }
    let q = q.bind(u32::try_from(limit).unwrap_or(u32::MAX));
    let rows = q.fetch_all_on(&s.conns).await.map_err(error::storage)?;
    let Some(first) = rows.first() else { return Ok(0) };
    let now: i64 = first.try_get("now_ms").map_err(error::storage)?;
    let bound =
        keep.age_ms.map(|age| now.saturating_sub(age)).into_iter().chain(by_count).max().unwrap_or(i64::MIN);
    let ids: Vec<String> = rows.iter().map(row::raw_id).collect();
    let ids = padded(ids.iter().map(String::as_str));
    let text =
        sql::slice(&sql::literals(sql!("housekeeping/delete_trimmed"), "states", &in_list), "ids", ids.len());
    let q = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()).bind(bound), &ids);
    let done = q.execute_on(&s.conns).await.map_err(error::storage)?;
    Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
}

impl Housekeeping for MySqlDialect {
    /// Recovers up to `limit` tasks whose lease expired, in three autocommit
    /// statements (no lock outlives a statement, so a leader stopped mid-reap
    /// blocks no heartbeat or finish: a stopped process holds nothing others need):
    ///
    /// 1. `SELECT ... WHERE state = 'RUNNING' AND lease_until < now ORDER BY
    ///    lease_until LIMIT n FOR UPDATE SKIP LOCKED`: expired leases no one is
    ///    changing right now (a heartbeat or finish in flight is skipped, not
    ///    waited for);
    /// 2. one UPDATE of those ids, conditional on the lease still being expired,
    ///    deciding each row's outcome in SQL (`TIMEOUT` past the deadline,
    ///    `FAILED` with no attempts left, else `PENDING` due now, the lost
    ///    attempt appended to its attempt log) and stamping a token;
    /// 3. the rows it changed read back by ids and token.
    ///
    /// The fence grows in every case, so the presumed-dead worker's late finish
    /// is refused (no two live attempts), and the task is never lost (no task is lost).
    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        if limit == 0 {
            return Ok(Reaped::default());
        }
        let limit = u32::try_from(limit.min(1000)).unwrap_or(1000);
        let reaped =
            error::retry_lock_conflicts_up_to(HOUSEKEEPING_RETRIES, || reap_once(self, ns, limit)).await?;
        // Back to waiting, or a slot of a limited queue freed by a dead
        // letter: work for an idle claimer of this process either way.
        if !reaped.is_empty() {
            self.notify_work();
        }
        Ok(reaped)
    }

    /// Deletes up to `limit` finished tasks past retention: `COMPLETED` and
    /// `CANCELLED` first, then dead letter if it has a retention. Each class is
    /// one range read of `ix_finished`, named in the statement (`SELECT id
    /// ... FORCE INDEX (ix_finished) ... LIMIT n FOR UPDATE SKIP LOCKED`,
    /// autocommit: rows someone holds are left for the next tick, not
    /// waited for) and one DELETE of those ids by primary key. Left to the
    /// optimizer, either statement may become a primary key scan of the
    /// namespace (it did: `tests/it/retained_history.rs`). The DELETE repeats
    /// the state and cutoff, so a task requeued in between is not deleted.
    /// A count limit first finds its cutoff from the newest `max + 1` of each
    /// state (`count_cutoff`).
    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        let limit = limit.min(10_000);
        let mut deleted = 0;
        let classes = [
            (Some(retention.completed), retention.completed_max, &["COMPLETED", "CANCELLED"][..]),
            (retention.dead_letter, retention.dead_letter_max, &["FAILED", "TIMEOUT", "ERROR"][..]),
        ];
        for (keep, max, states) in classes {
            if keep.is_none() && max.is_none() {
                continue;
            }
            let room = limit.saturating_sub(deleted);
            if room == 0 {
                break;
            }
            let rule = Keep { age_ms: keep.map(ms), max };
            deleted += error::retry_lock_conflicts_up_to(HOUSEKEEPING_RETRIES, || {
                trim_class(self, ns, states, rule, room)
            })
            .await?;
        }
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use crate::sql::sql;

    #[test]
    fn the_reap_logs_the_reason_it_records() {
        assert!(sql!("housekeeping/reap").contains(&format!("'{}'", super::REAP_REASON)));
    }
}
