//! Leader-only housekeeping: recovering expired leases and trimming
//! finished tasks, both in bounded batches of one statement each.

use executor_core::{Namespace, Result, TaskState, query::Retention, storage::Reaped};
use executor_sql::dialect::Housekeeping;
use executor_sql::row;
use sqlx::Row;

use crate::{
    PostgresDialect,
    conn::RunOn,
    error,
    sql::{ms, sql},
};

/// Lock conflicts housekeeping runs again before leaving the rest to its
/// next tick.
const HOUSEKEEPING_RETRIES: u32 = 1;

/// The reap, in one statement (see the file): up to `$2` expired leases no
/// one is changing right now, each moved on as its row says with its fence
/// bumped, so the presumed-dead worker's late finish is refused and no
/// two attempts of a task overlap.
const REAP_SQL: &str = sql!("housekeeping/reap");

/// What a class of finished tasks keeps: those finished within `age_ms`
/// (`None`: any age) and among the newest `max` (`None`: any number).
#[derive(Clone, Copy)]
struct Keep {
    age_ms: Option<i64>,
    max: Option<u64>,
}

/// The `finished_at` of the newest task past the newest `max` of the class:
/// that task and every older one are over the count. Each state of the
/// class is its own walk of `max + 1` entries of `ix_finished` from the
/// newest, merged.
async fn count_cutoff(s: &PostgresDialect, ns: &Namespace, states: &[&str], max: u64) -> Result<Option<i64>> {
    let max = i64::try_from(max).unwrap_or(i64::MAX - 1);
    let row = sqlx::query(sql!("housekeeping/count_cutoff"))
        .bind(ns.as_str())
        .bind(states)
        .bind(max)
        .fetch_optional_on(&s.conns)
        .await
        .map_err(error::storage)?;
    row.map(|r| r.try_get::<i64, _>("finished_at")).transpose().map_err(error::storage)
}

/// Deletes up to `limit` tasks of a class past its age or its count (ties
/// at the count's millisecond go together: at most `max` stay).
async fn trim_class(
    s: &PostgresDialect,
    ns: &Namespace,
    states: &[&str],
    keep: Keep,
    limit: usize,
) -> Result<usize> {
    let by_count = match keep.max {
        Some(max) => count_cutoff(s, ns, states, max).await?,
        None => None,
    };
    if keep.age_ms.is_none() && by_count.is_none() {
        return Ok(0);
    }
    let done = sqlx::query(sql!("housekeeping/trim"))
        .bind(ns.as_str())
        .bind(states)
        .bind(keep.age_ms)
        .bind(by_count)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .execute_on(&s.conns)
        .await
        .map_err(error::storage)?;
    Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
}

impl Housekeeping for PostgresDialect {
    /// Recovers up to `limit` tasks whose lease expired (`REAP_SQL`, one
    /// autocommit statement: a leader stopped mid-reap blocks no heartbeat
    /// or finish, a stopped process holds nothing others need). The task is never lost (no task is lost).
    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        if limit == 0 {
            return Ok(Reaped::default());
        }
        let limit = i64::try_from(limit.min(1000)).unwrap_or(1000);
        let rows = error::retry_lock_conflicts_up_to(HOUSEKEEPING_RETRIES, || async {
            sqlx::query(REAP_SQL)
                .bind(ns.as_str())
                .bind(limit)
                .fetch_all_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await?;
        let mut reaped = Reaped::default();
        for r in &rows {
            let id = row::id_for_error(&row::raw_id(r));
            let state: String = r.try_get("state").map_err(error::storage)?;
            match row::exact_state(&state) {
                Ok(TaskState::Failed) => reaped.failed.push(id),
                Ok(TaskState::Timeout) => reaped.timed_out.push(id),
                Ok(TaskState::Pending) => reaped.retried.push(id),
                _ => {
                    tracing::warn!(task = %id, "running task with its fence at the column's maximum moved to ERROR")
                }
            }
        }
        if !reaped.retried.is_empty() {
            self.notify_work(ns);
        }
        Ok(reaped)
    }

    /// Deletes up to `limit` finished tasks past retention: `COMPLETED` and
    /// `CANCELLED` first, then dead letter if it has a retention. Each class
    /// is one DELETE of the rows a locking read of `ix_finished` picks
    /// (`FOR UPDATE SKIP LOCKED`: rows someone holds are left for the next
    /// tick, not waited for); the DELETE checks the state again, so a task
    /// requeued in between is not deleted.
    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        let limit = limit.min(10_000);
        let mut deleted = 0;
        let classes: [(Option<std::time::Duration>, Option<u64>, &[&str]); 2] = [
            (Some(retention.completed), retention.completed_max, &["COMPLETED", "CANCELLED"]),
            (retention.dead_letter, retention.dead_letter_max, &["FAILED", "TIMEOUT", "ERROR"]),
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
