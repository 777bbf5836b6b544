//! Claiming due tasks and renewing the leases on them.

use std::{collections::HashMap, time::Duration};

use executor_core::{
    Namespace, Result, TaskRecord, TaskState, WorkerId,
    storage::{Heartbeat, Lease},
};
use sqlx::{MySql, QueryBuilder, Row};

use crate::{
    MySqlStorage,
    conn::RunOn,
    error, row,
    sql::{
        self, MAX_ATTEMPTS_COLUMN, MAX_FENCE_COLUMN, clip_error, ms, now_ms, push_in_list, task_columns,
        tasks,
    },
};

/// Most tasks one claim or heartbeat statement names.
const MAX_BATCH: usize = 1000;

/// Rounds of a claim that lost candidates to concurrent claimers.
const ROUNDS: usize = 3;

impl MySqlStorage {
    /// Claims up to `limit` due tasks in three autocommit statements, none of
    /// which waits for the client while it holds a lock (invariant 9: a claimer
    /// stopped at any point holds nothing; the tasks it claimed come back
    /// through the reaper one lease later):
    ///
    /// 1. `SELECT id ... WHERE ready_at <= now ORDER BY ready_at LIMIT 2n FOR
    ///    UPDATE SKIP LOCKED`: candidates no one is changing right now (the
    ///    locks end with the statement);
    /// 2. `UPDATE ... WHERE id IN (candidates) AND ready_at <= now ORDER BY
    ///    ready_at LIMIT n`, stamping a fresh token: the condition is checked
    ///    again under the row lock, so two claimers never take the same task
    ///    (invariant 2) and nothing is taken before it is due (invariant 4, on
    ///    the server's clock);
    /// 3. the claimed rows read back by their ids and the token.
    ///
    /// Candidates are fetched twice over so that a concurrent claimer that
    /// picked the same ones leaves this one the rest; a claim that lost
    /// candidates that way tries again, up to [`ROUNDS`] times. A waiting row
    /// whose counters are at their column's maximum, or that does not parse,
    /// is moved to `ERROR` with the reason, so it can never block the queue.
    pub(crate) async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let mut claimed = Vec::new();
        let mut want = limit.min(MAX_BATCH);
        for _ in 0..ROUNDS {
            if want == 0 {
                break;
            }
            let round = error::retry_lock_conflicts(|| claim_once(self, ns, worker, want, lease)).await?;
            want -= round.tasks.len().min(want);
            claimed.extend(round.tasks);
            if !round.lost_race {
                break;
            }
        }
        Ok(claimed)
    }

    /// Renews every lease in one UPDATE (only rows still `RUNNING` with the
    /// lease's fence, so a lost lease is never revived: invariant 2), then one
    /// SELECT tells which leases are lost and which tasks have a cancel request.
    pub(crate) async fn heartbeat(
        &self,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> Result<Heartbeat> {
        let mut out = Heartbeat::default();
        for chunk in leases.chunks(MAX_BATCH) {
            heartbeat_chunk(self, ns, chunk, lease, &mut out).await?;
        }
        Ok(out)
    }
}

/// What one round claimed, and whether candidates went to another claimer.
struct Round {
    tasks: Vec<TaskRecord>,
    lost_race: bool,
}

async fn claim_once(
    s: &MySqlStorage,
    ns: &Namespace,
    worker: &WorkerId,
    limit: usize,
    lease: Duration,
) -> Result<Round> {
    let rows = sqlx::query(concat!(
        "SELECT id, attempts, fence FROM ",
        tasks!(),
        " WHERE ns = ? AND ready_at <= ",
        now_ms!(),
        " ORDER BY ready_at LIMIT ? FOR UPDATE SKIP LOCKED"
    ))
    .bind(ns.as_str())
    .bind(u32::try_from((limit * 2).min(2 * MAX_BATCH)).unwrap_or(u32::MAX))
    .fetch_all_on(&s.conns)
    .await
    .map_err(error::storage)?;
    let mut candidates = Vec::with_capacity(rows.len());
    for r in &rows {
        let id = row::raw_id(r);
        let attempts: u32 = r.try_get("attempts").map_err(error::storage)?;
        let fence: u64 = r.try_get("fence").map_err(error::storage)?;
        if attempts == MAX_ATTEMPTS_COLUMN || fence == MAX_FENCE_COLUMN {
            // Bumping it would fail the claim "out of range", every time.
            let reason = format!("attempts {attempts} or fence {fence} is at its column's maximum");
            to_error(s, ns, &id, None, &reason).await?;
        } else {
            candidates.push(id);
        }
    }
    if candidates.is_empty() {
        return Ok(Round { tasks: Vec::new(), lost_race: false });
    }
    let token = sql::token();
    let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!(
        "UPDATE ",
        tasks!(),
        " SET fence = fence + 1, attempts = attempts + 1, cancel_requested = 0, started_at = ",
        now_ms!(),
        ", lease_until = ",
        now_ms!(),
        " + "
    ));
    qb.push_bind(ms(lease))
        .push(", worker = ")
        .push_bind(worker.as_str().to_owned())
        .push(", claim_token = ")
        .push_bind(token)
        .push(", state = 'RUNNING' WHERE ns = ")
        .push_bind(ns.as_str().to_owned())
        .push(" AND id IN ");
    push_in_list(&mut qb, candidates.iter().map(String::as_str));
    qb.push(concat!(" AND ready_at <= ", now_ms!(), " AND attempts < "))
        .push_bind(MAX_ATTEMPTS_COLUMN)
        .push(" AND fence < ")
        .push_bind(MAX_FENCE_COLUMN)
        .push(" ORDER BY ready_at LIMIT ")
        .push_bind(u32::try_from(limit).unwrap_or(u32::MAX));
    let changed = qb.build().execute_on(&s.conns).await.map_err(error::storage)?.rows_affected();
    let lost_race = changed < u64::try_from(limit.min(candidates.len())).unwrap_or(u64::MAX);
    if changed == 0 {
        return Ok(Round { tasks: Vec::new(), lost_race });
    }
    let mut qb: QueryBuilder<MySql> =
        QueryBuilder::new(concat!("SELECT ", task_columns!(), " FROM ", tasks!(), " WHERE ns = "));
    qb.push_bind(ns.as_str().to_owned()).push(" AND id IN ");
    push_in_list(&mut qb, candidates.iter().map(String::as_str));
    // RUNNING: a claimer stopped between its UPDATE and this read for
    // longer than the lease finds its tasks reaped and does not run them.
    qb.push(" AND state = 'RUNNING' AND claim_token = ").push_bind(token).push(" ORDER BY due_at, id");
    let rows = qb.build().fetch_all_on(&s.conns).await.map_err(error::storage)?;
    let mut tasks = Vec::with_capacity(rows.len());
    for r in &rows {
        match row::task_from_row(r) {
            Ok(task) => tasks.push(task),
            Err(reason) => to_error(s, ns, &row::raw_id(r), Some(token), &reason).await?,
        }
    }
    Ok(Round { tasks, lost_race })
}

/// Moves a row that cannot run to `ERROR` with the reason (invariant 6).
/// `token`: the claim that took it (the row is `RUNNING` under that claim);
/// `None`: it is still waiting. The fence is not bumped: it may be the very
/// value that overflows, and no other worker holds a lease on the row.
pub(crate) async fn to_error(
    s: &MySqlStorage,
    ns: &Namespace,
    raw_id: &str,
    token: Option<u64>,
    reason: &str,
) -> Result<()> {
    tracing::warn!(task = %raw_id, %reason, "corrupt task row moved to ERROR");
    sqlx::query(concat!(
        "UPDATE ",
        tasks!(),
        " SET finished_at = ",
        now_ms!(),
        ", last_error = ?, worker = NULL, lease_until = NULL, state = 'ERROR' \
         WHERE ns = ? AND id = ? AND LENGTH(id) = ? AND IF(? IS NULL, state IN ('CREATED', 'PENDING'), \
         state = 'RUNNING' AND claim_token = ?)"
    ))
    .bind(clip_error(&format!("corrupt record: {reason}")).into_owned())
    .bind(ns.as_str())
    .bind(raw_id)
    .bind(u32::try_from(raw_id.len()).unwrap_or(u32::MAX))
    .bind(token)
    .bind(token)
    .execute_on(&s.conns)
    .await
    .map_err(error::storage)?;
    Ok(())
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
