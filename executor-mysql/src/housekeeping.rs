//! Leader-only housekeeping: recovering expired leases and trimming
//! finished tasks, both in bounded batches.

use executor_core::{Namespace, Reaped, Result, Retention, TaskId};
use sqlx::{MySql, QueryBuilder, Row};

use crate::{
    MySqlStorage,
    conn::RunOn,
    error, row,
    sql::{ms, now_ms, push_in_list, tasks},
};

/// The reason a reaped task records.
const REAP_REASON: &str = "lease expired (worker presumed dead)";

/// Recovers up to `limit` tasks whose lease expired, in one READ COMMITTED
/// transaction: a locking `SKIP LOCKED` read of the `ix_lease` range, then
/// at most one UPDATE per outcome. The fence grows in every case, so the
/// presumed-dead worker's late finish is refused (invariant 2), and the
/// task is never lost (invariant 1).
pub(crate) async fn reap(s: &MySqlStorage, ns: &Namespace, limit: usize) -> Result<Reaped> {
    if limit == 0 {
        return Ok(Reaped::default());
    }
    let limit = u32::try_from(limit.min(1000)).unwrap_or(1000);
    let reaped = error::retry_lock_conflicts(|| reap_once(s, ns, limit)).await?;
    if !reaped.retried.is_empty() {
        s.notify_work();
    }
    Ok(reaped)
}

async fn reap_once(s: &MySqlStorage, ns: &Namespace, limit: u32) -> Result<Reaped> {
    let mut c = s.conns.get().await.map_err(error::storage)?;
    let mut tx = c.begin_read_committed().await.map_err(error::storage)?;
    let rows = sqlx::query(concat!(
        "SELECT id, deadline, attempts, max_attempts, ",
        now_ms!(),
        " AS now_ms FROM ",
        tasks!(),
        " WHERE ns = ? AND state = 'RUNNING' AND lease_until < ",
        now_ms!(),
        " ORDER BY lease_until LIMIT ? FOR UPDATE SKIP LOCKED"
    ))
    .bind(ns.as_str())
    .bind(limit)
    .fetch_all(&mut *tx)
    .await
    .map_err(error::storage)?;
    let mut now = 0i64;
    let (mut retried, mut failed, mut timed_out) = (Vec::new(), Vec::new(), Vec::new());
    for r in &rows {
        now = r.try_get("now_ms").map_err(error::storage)?;
        let id = row::raw_id(r);
        let deadline: Option<i64> = r.try_get("deadline").map_err(error::storage)?;
        let attempts: u32 = r.try_get("attempts").map_err(error::storage)?;
        let max_attempts: u32 = r.try_get("max_attempts").map_err(error::storage)?;
        if deadline.is_some_and(|d| now >= d) {
            timed_out.push(id);
        } else if attempts >= max_attempts {
            failed.push(id);
        } else {
            retried.push(id);
        }
    }
    for (ids, state) in [(&retried, "PENDING"), (&failed, "FAILED"), (&timed_out, "TIMEOUT")] {
        if ids.is_empty() {
            continue;
        }
        let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!(
            "UPDATE ",
            tasks!(),
            " SET fence = fence + 1, worker = NULL, lease_until = NULL, cancel_requested = 0, last_error = "
        ));
        qb.push_bind(REAP_REASON);
        if state == "PENDING" {
            qb.push(", due_at = ").push_bind(now);
        } else {
            qb.push(", finished_at = ").push_bind(now);
        }
        qb.push(", state = ").push_bind(state).push(" WHERE ns = ").push_bind(ns.as_str().to_owned());
        qb.push(" AND id IN ");
        push_in_list(&mut qb, ids.iter().map(String::as_str));
        qb.build().execute(&mut *tx).await.map_err(error::storage)?;
    }
    tx.commit().await.map_err(error::storage)?;
    c.done();
    let ids = |v: Vec<String>| v.iter().map(|raw| row::id_for_error(raw)).collect::<Vec<TaskId>>();
    Ok(Reaped { retried: ids(retried), failed: ids(failed), timed_out: ids(timed_out) })
}

/// Deletes up to `limit` finished tasks past retention: `COMPLETED` and
/// `CANCELLED` first, then dead letter if it has a retention. Each class is
/// one index-only range read of `ix_finished` (`SELECT id ... LIMIT n`) and
/// one DELETE of those ids by primary key. A single `DELETE ... LIMIT n`
/// would leave the choice of index to the optimizer, which picks a primary
/// key scan when most of a namespace is past retention. The DELETE repeats
/// the state and cutoff, so a task requeued in between is not deleted.
pub(crate) async fn trim(
    s: &MySqlStorage,
    ns: &Namespace,
    retention: &Retention,
    limit: usize,
) -> Result<u64> {
    let limit = limit.min(10_000);
    let mut deleted = 0;
    let classes = [
        (Some(retention.completed), "('COMPLETED', 'CANCELLED')"),
        (retention.dead_letter, "('FAILED', 'TIMEOUT', 'ERROR')"),
    ];
    for (keep, states) in classes {
        let Some(keep) = keep else { continue };
        let room = limit.saturating_sub(deleted);
        if room == 0 {
            break;
        }
        deleted += trim_class(s, ns, states, ms(keep), room).await?;
    }
    Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
}

async fn trim_class(
    s: &MySqlStorage,
    ns: &Namespace,
    states: &str,
    keep_ms: i64,
    limit: usize,
) -> Result<usize> {
    let mut qb: QueryBuilder<MySql> =
        QueryBuilder::new(concat!("SELECT id, ", now_ms!(), " AS now_ms FROM ", tasks!(), " WHERE ns = "));
    qb.push_bind(ns.as_str().to_owned())
        .push(" AND state IN ")
        .push(states)
        .push(concat!(" AND finished_at <= ", now_ms!(), " - "))
        .push_bind(keep_ms)
        .push(" LIMIT ")
        .push_bind(u32::try_from(limit).unwrap_or(u32::MAX));
    let rows = qb.build().fetch_all_on(&s.conns).await.map_err(error::storage)?;
    let Some(first) = rows.first() else { return Ok(0) };
    let now: i64 = first.try_get("now_ms").map_err(error::storage)?;
    let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!("DELETE FROM ", tasks!(), " WHERE ns = "));
    qb.push_bind(ns.as_str().to_owned())
        .push(" AND state IN ")
        .push(states)
        .push(" AND finished_at <= ")
        .push_bind(now.saturating_sub(keep_ms))
        .push(" AND id IN ");
    let ids: Vec<String> = rows.iter().map(row::raw_id).collect();
    push_in_list(&mut qb, ids.iter().map(String::as_str));
    let done = qb.build().execute_on(&s.conns).await.map_err(error::storage)?;
    Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
}
