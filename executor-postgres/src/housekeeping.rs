//! Leader-only housekeeping: recovering expired leases and trimming
//! finished tasks, both in bounded batches of one statement each.

use executor_core::{Namespace, Result, Retention, TaskState, storage::Reaped};
use sqlx::Row;

use crate::{
    PostgresStorage,
    conn::RunOn,
    error, row,
    sql::{log_append, ms, now_ms, tasks},
};

/// Lock conflicts housekeeping runs again before leaving the rest to its
/// next tick.
const HOUSEKEEPING_RETRIES: u32 = 1;

/// Outcome of a reaped row, decided in SQL on the row as it is under the
/// statement's lock (SET expressions read the row before the update).
macro_rules! timed_out {
    () => {
        concat!("(t.deadline IS NOT NULL AND ", now_ms!(), " >= t.deadline)")
    };
}
macro_rules! no_attempts_left {
    () => {
        "(t.attempts >= t.max_attempts)"
    };
}
macro_rules! fence_at_max {
    () => {
        "(t.fence >= 9223372036854775807)"
    };
}
macro_rules! retried {
    () => {
        concat!("(NOT ", timed_out!(), " AND NOT ", no_attempts_left!(), " AND NOT ", fence_at_max!(), ")")
    };
}

/// The reap, in one statement: up to `$2` expired leases no one is
/// changing right now (`FOR UPDATE SKIP LOCKED`: a heartbeat or finish in
/// flight is skipped, not waited for), each moved on as its row says
/// (`TIMEOUT` past the deadline, `FAILED` with no attempts left, else
/// `PENDING` due now, the lost attempt appended to its attempt log) with
/// its fence bumped, so the presumed-dead worker's
/// late finish is refused (invariant 2). A row whose fence is at its
/// column's maximum cannot be bumped: it goes to `ERROR` with the reason.
/// The rows are updated by `ctid`, as the claim's are (see `claim.rs`).
const REAP_SQL: &str = concat!(
    "WITH c AS (SELECT ctid FROM ",
    tasks!(),
    " WHERE ns = $1 AND state = 'RUNNING' AND lease_until < ",
    now_ms!(),
    " ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) UPDATE ",
    tasks!(),
    " t SET attempt_log = CASE WHEN ",
    retried!(),
    " THEN ",
    log_append!(concat!(
        "jsonb_build_object('attempt', t.attempts, 'worker', t.worker, 'started_at', t.started_at, 'ended_at', ",
        now_ms!(),
        ", 'outcome', 'lease_expired', 'error', 'lease expired (worker presumed dead)')"
    )),
    " ELSE t.attempt_log END, due_at = CASE WHEN ",
    retried!(),
    " THEN ",
    now_ms!(),
    " ELSE t.due_at END, finished_at = CASE WHEN ",
    retried!(),
    " THEN t.finished_at ELSE ",
    now_ms!(),
    " END, state = CASE WHEN ",
    fence_at_max!(),
    " THEN 'ERROR' WHEN ",
    timed_out!(),
    " THEN 'TIMEOUT' WHEN ",
    no_attempts_left!(),
    " THEN 'FAILED' ELSE 'PENDING' END, fence = CASE WHEN ",
    fence_at_max!(),
    " THEN t.fence ELSE t.fence + 1 END, last_error = CASE WHEN ",
    fence_at_max!(),
    " THEN 'corrupt record: fence is at its column''s maximum' ELSE 'lease expired (worker presumed dead)' END, \
     worker = NULL, lease_until = NULL, cancel_requested = FALSE WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM c))",
    " RETURNING t.id, t.state"
);

impl PostgresStorage {
    /// Recovers up to `limit` tasks whose lease expired ([`REAP_SQL`], one
    /// autocommit statement: a leader stopped mid-reap blocks no heartbeat
    /// or finish, invariant 9). The task is never lost (invariant 1).
    pub(crate) async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
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
    pub(crate) async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
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
async fn count_cutoff(s: &PostgresStorage, ns: &Namespace, states: &[&str], max: u64) -> Result<Option<i64>> {
    let max = i64::try_from(max).unwrap_or(i64::MAX - 1);
    let row = sqlx::query(concat!(
        "SELECT x.finished_at FROM UNNEST($2::TEXT[]) AS s(state) CROSS JOIN LATERAL (SELECT finished_at FROM ",
        tasks!(),
        " t WHERE t.ns = $1 AND t.state = s.state AND t.finished_at IS NOT NULL ORDER BY t.finished_at DESC \
         LIMIT $3 + 1) x ORDER BY x.finished_at DESC LIMIT 1 OFFSET $3"
    ))
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
    s: &PostgresStorage,
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
    // A CTE, not `id IN (subquery)`: a locking subquery with a LIMIT may
    // be run again by the plan and hand over other rows (a conformance
    // test saw 4 deleted with a limit of 2); a CTE runs once. The rows it
    // locked are deleted by `ctid`, as the claim updates its rows.
    let done = sqlx::query(concat!(
        "WITH c AS (SELECT ctid FROM ",
        tasks!(),
        " WHERE ns = $1 AND state = ANY($2::TEXT[]) AND (finished_at <= ",
        now_ms!(),
        " - $3 OR finished_at <= $4) LIMIT $5 FOR UPDATE SKIP LOCKED) DELETE FROM ",
        tasks!(),
        " WHERE ctid = ANY(ARRAY(SELECT ctid FROM c))"
    ))
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
