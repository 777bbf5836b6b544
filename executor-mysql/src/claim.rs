//! Claiming due tasks and renewing the leases on them.

use std::{collections::HashMap, time::Duration};

use executor_core::{Heartbeat, Lease, Namespace, Result, TaskRecord, TaskState, Timestamp, WorkerId};
use sqlx::{MySql, QueryBuilder, Row};

use crate::{
    MySqlStorage,
    conn::RunOn,
    error, row,
    sql::{clip_error, ms, now_ms, push_in_list, task_columns, tasks},
};

/// Most tasks one claim or heartbeat statement names.
const MAX_BATCH: usize = 1000;

/// Claims up to `limit` due tasks in one READ COMMITTED transaction:
/// `SELECT ... ORDER BY ready_at LIMIT n FOR UPDATE SKIP LOCKED`, then one
/// UPDATE for the whole batch. Rows another claimer holds are skipped, not
/// waited for, so claimers never hand out a task twice (invariant 2) and
/// never block each other; `ready_at <= NOW(3)` keeps invariant 4 on the
/// server's clock. A dropped connection rolls the transaction back: the
/// tasks stay due. A row that does not parse is moved to `ERROR` with the
/// reason in the same transaction, so it can never block the queue.
pub(crate) async fn claim(
    s: &MySqlStorage,
    ns: &Namespace,
    worker: &WorkerId,
    limit: usize,
    lease: Duration,
) -> Result<Vec<TaskRecord>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let limit = limit.min(MAX_BATCH);
    error::retry_lock_conflicts(|| claim_once(s, ns, worker, limit, lease)).await
}

async fn claim_once(
    s: &MySqlStorage,
    ns: &Namespace,
    worker: &WorkerId,
    limit: usize,
    lease: Duration,
) -> Result<Vec<TaskRecord>> {
    let mut c = s.conns.get().await.map_err(error::storage)?;
    let mut tx = c.begin_read_committed().await.map_err(error::storage)?;
    let rows = sqlx::query(concat!(
        "SELECT ",
        task_columns!(),
        ", ",
        now_ms!(),
        " AS now_ms FROM ",
        tasks!(),
        " WHERE ns = ? AND ready_at <= ",
        now_ms!(),
        " ORDER BY ready_at LIMIT ? FOR UPDATE SKIP LOCKED"
    ))
    .bind(ns.as_str())
    .bind(u32::try_from(limit).unwrap_or(u32::MAX))
    .fetch_all(&mut *tx)
    .await
    .map_err(error::storage)?;
    let Some(first) = rows.first() else {
        tx.commit().await.map_err(error::storage)?;
        c.done();
        return Ok(Vec::new());
    };
    // The server's now, read in the locking SELECT; the UPDATE stamps the
    // same value so the records handed back match the rows exactly.
    let now: i64 = first.try_get("now_ms").map_err(error::storage)?;
    let mut claimed = Vec::with_capacity(rows.len());
    let mut corrupt = Vec::new();
    for r in &rows {
        match row::task_from_row(r) {
            // A counter at its column's maximum (edited by hand) would make the
            // batch UPDATE fail "out of range" for every task in it, forever:
            // send that one task to ERROR instead (invariant 6).
            Ok(task) if task.attempts == u32::MAX || task.fence == u64::MAX => corrupt.push((
                task.id.as_str().to_owned(),
                format!("attempts {} or fence {} is at its column's maximum", task.attempts, task.fence),
            )),
            Ok(task) => claimed.push(task),
            Err(reason) => corrupt.push((row::raw_id(r), reason)),
        }
    }
    let lease_until = now.saturating_add(ms(lease));
    if !claimed.is_empty() {
        let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!(
            "UPDATE ",
            tasks!(),
            " SET fence = fence + 1, attempts = attempts + 1, cancel_requested = 0, started_at = "
        ));
        qb.push_bind(now)
            .push(", lease_until = ")
            .push_bind(lease_until)
            .push(", worker = ")
            .push_bind(worker.as_str().to_owned())
            .push(", state = 'RUNNING' WHERE ns = ")
            .push_bind(ns.as_str().to_owned())
            .push(" AND id IN ");
        push_in_list(&mut qb, claimed.iter().map(|t| t.id.as_str()));
        qb.build().execute(&mut *tx).await.map_err(error::storage)?;
    }
    for (id, reason) in &corrupt {
        tracing::warn!(task = %id, %reason, "corrupt task row moved to ERROR by claim");
        sqlx::query(concat!(
            "UPDATE ",
            tasks!(),
            // No fence bump: the row waited, so no worker holds a lease on
            // it, and its fence may be the very value that overflows.
            " SET finished_at = ?, last_error = ?, worker = NULL, lease_until = NULL, \
             state = 'ERROR' WHERE ns = ? AND id = ?"
        ))
        .bind(now)
        .bind(clip_error(&format!("corrupt record: {reason}")).into_owned())
        .bind(ns.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(error::storage)?;
    }
    tx.commit().await.map_err(error::storage)?;
    c.done();
    let now = Timestamp::from_millis(u64::try_from(now).unwrap_or(0));
    let lease_until = Timestamp::from_millis(u64::try_from(lease_until).unwrap_or(0));
    for t in &mut claimed {
        t.state = TaskState::Running;
        t.fence += 1;
        t.attempts += 1;
        t.cancel_requested = false;
        t.started_at = Some(now);
        t.lease_until = Some(lease_until);
        t.worker = Some(worker.clone());
    }
    Ok(claimed)
}

/// Renews every lease in one UPDATE (only rows still `RUNNING` with the
/// lease's fence, so a lost lease is never revived: invariant 2), then one
/// SELECT tells which leases are lost and which tasks have a cancel request.
pub(crate) async fn heartbeat(
    s: &MySqlStorage,
    ns: &Namespace,
    leases: &[Lease],
    lease: Duration,
) -> Result<Heartbeat> {
    let mut out = Heartbeat::default();
    for chunk in leases.chunks(MAX_BATCH) {
        heartbeat_chunk(s, ns, chunk, lease, &mut out).await?;
    }
    Ok(out)
}

async fn heartbeat_chunk(
    s: &MySqlStorage,
    ns: &Namespace,
    leases: &[Lease],
    lease: Duration,
    out: &mut Heartbeat,
) -> Result<()> {
    if leases.is_empty() {
        return Ok(());
    }
    let mut qb: QueryBuilder<MySql> =
        QueryBuilder::new(concat!("UPDATE ", tasks!(), " SET lease_until = ", now_ms!(), " + "));
    qb.push_bind(ms(lease)).push(" WHERE ns = ").push_bind(ns.as_str().to_owned());
    push_ids(&mut qb, leases);
    qb.push(" AND state = 'RUNNING' AND (id, fence) IN (");
    let mut pairs = qb.separated(", ");
    // Padded like `push_in_list`, repeating the last pair.
    let pad = leases.len().next_power_of_two() - leases.len();
    for l in leases.iter().chain(leases.last().into_iter().flat_map(|l| std::iter::repeat_n(l, pad))) {
        pairs
            .push("(")
            .push_bind_unseparated(l.id.as_str().to_owned())
            .push_unseparated(", ")
            .push_bind_unseparated(l.fence)
            .push_unseparated(")");
    }
    qb.push(")");
    qb.build().execute_on(&s.conns).await.map_err(error::storage)?;

    let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!(
        "SELECT id, fence, state, cancel_requested FROM ",
        tasks!(),
        " WHERE ns = "
    ));
    qb.push_bind(ns.as_str().to_owned());
    push_ids(&mut qb, leases);
    let rows = qb.build().fetch_all_on(&s.conns).await.map_err(error::storage)?;
    let mut current: HashMap<String, (u64, String, bool)> = HashMap::with_capacity(rows.len());
    for r in rows {
        let id: String = r.try_get("id").map_err(error::storage)?;
        let fence: u64 = r.try_get("fence").map_err(error::storage)?;
        let state: String = r.try_get("state").map_err(error::storage)?;
        let cancel: bool = r.try_get("cancel_requested").map_err(error::storage)?;
        current.insert(id, (fence, state, cancel));
    }
    for l in leases {
        match current.get(l.id.as_str()) {
            Some((fence, state, cancel)) if *fence == l.fence && state == TaskState::Running.as_str() => {
                if *cancel {
                    out.cancel_requested.push(l.id.clone());
                }
            }
            _ => out.lost.push(l.id.clone()),
        }
    }
    Ok(())
}

fn push_ids(qb: &mut QueryBuilder<MySql>, leases: &[Lease]) {
    qb.push(" AND id IN ");
    push_in_list(qb, leases.iter().map(|l| l.id.as_str()));
}
