//! Claiming due tasks and renewing the leases on them.

use executor_sql::dialect::Claim;
use executor_sql::{
    row::{self, to_error},
    stmt::Value,
};
use std::time::Duration;

use executor_core::{
    Namespace, QueueName, Result, TaskRecord, WorkerId,
    queue::ClaimPlan,
    storage::{Heartbeat, Lease},
};
use sqlx::{Row, postgres::PgRow};

use crate::{
    PostgresDialect,
    conn::RunOn,
    error,
    sql::{big, ms, sql},
};

/// Most tasks one claim or heartbeat statement names.
const MAX_BATCH: usize = 1000;

/// The claim of one queue, in one statement (see the file): the due tasks
/// in claim order, skipping rows another claimer holds, moved to `RUNNING`
/// by `ctid`, and whether the queue has limits.
///
/// Binds: ns, queue, limit, lease ms, worker.
const CLAIM_SQL: &str = sql!("claim/claim_queue");

/// What one claim of one queue took, and whether the queue has limits.
struct Round {
    tasks: Vec<TaskRecord>,
    limited: bool,
}

impl PostgresDialect {
    /// Up to `upto` tasks of one queue, the plain way or, for a queue with
    /// limits, through `limits.rs`; whether the queue may give more.
    async fn claim_one(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        queue: &QueueName,
        upto: usize,
        lease: Duration,
    ) -> Result<(Vec<TaskRecord>, executor_sql::limits::Outcome)> {
        if self.limited.known(ns, queue) {
            let (took, outcome) = self.claim_limited(ns, worker, queue, upto, lease).await?;
            if outcome != executor_sql::limits::Outcome::Unlimited {
                return Ok((took, outcome));
            }
            self.limited.forget(ns, queue);
        }
        let round = error::retry_lock_conflicts(|| claim_round(self, ns, worker, queue, upto, lease)).await?;
        let mut took = round.tasks;
        if round.limited {
            self.limited.remember(ns, queue);
            let (more, outcome) = self.claim_limited(ns, worker, queue, upto - took.len(), lease).await?;
            took.extend(more);
            return Ok((took, outcome));
        }
        sort_claim_order(&mut took);
        let outcome = if took.len() >= upto {
            executor_sql::limits::Outcome::Full
        } else {
            executor_sql::limits::Outcome::Done
        };
        Ok((took, outcome))
    }
}

/// One statement of [`CLAIM_SQL`].
async fn claim_round(
    s: &PostgresDialect,
    ns: &Namespace,
    worker: &WorkerId,
    queue: &QueueName,
    upto: usize,
    lease: Duration,
) -> Result<Round> {
    let rows = sqlx::query(CLAIM_SQL)
        .bind(ns.as_str())
        .bind(queue.as_str())
        .bind(i64::try_from(upto).unwrap_or(i64::MAX))
        .bind(ms(lease))
        .bind(worker.as_str())
        .fetch_all_on(&s.conns)
        .await
        .map_err(error::storage)?;
    let limited = match rows.first() {
        Some(r) => r.try_get::<bool, _>("lim").map_err(error::storage)?,
        None => false,
    };
    let mut tasks = Vec::with_capacity(rows.len());
    for r in &rows {
        if r.try_get::<Option<String>, _>("id").map_err(error::storage)?.is_none() {
            continue;
        }
        read_claimed(s, ns, r, &mut tasks).await?;
    }
    Ok(Round { tasks, limited })
}

/// A claimed row as a task; a row moved to `ERROR` by the claim is left
/// out, and one that does not parse is moved to `ERROR` with the reason.
pub(crate) async fn read_claimed(
    s: &PostgresDialect,
    ns: &Namespace,
    r: &PgRow,
    tasks: &mut Vec<TaskRecord>,
) -> Result<()> {
    let state: String = r.try_get("state").map_err(error::storage)?;
    if state != "RUNNING" {
        tracing::warn!(task = %row::raw_id(r), "task with counters at their column's maximum moved to ERROR");
        return Ok(());
    }
    match row::task::<PostgresDialect>(r) {
        Ok(task) => tasks.push(task),
        Err(reason) => {
            let fence: i64 = r.try_get("fence").map_err(error::storage)?;
            to_error(s, ns, &row::raw_id(r), Value::OptInt(Some(fence)), &reason).await?;
        }
    }
    Ok(())
}

/// Claim order: priority high first, then due time, then id.
pub(crate) fn sort_claim_order(tasks: &mut [TaskRecord]) {
    tasks.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.due_at.cmp(&b.due_at))
            .then_with(|| a.id.as_str().cmp(b.id.as_str()))
    });
}

impl Claim for PostgresDialect {
    /// Claims as `plan` says: each queue of the plan up to its quota, in
    /// the plan's order, then the rest of the limit from the same queues in
    /// order. Each queue is one autocommit statement (`CLAIM_SQL`): no
    /// lock outlives it, so a claimer stopped at any point holds nothing
    /// (a stopped process holds nothing others need; the tasks it claimed come back through the reaper one
    /// lease later), the fence and the state are checked under the row
    /// lock, so two claimers never take the same task (no two live attempts), and
    /// nothing is taken before it is due on the server's clock (invariant
    /// 4).
    ///
    /// A queue with fleet-wide limits is left out of those statements and
    /// claimed in its own short transaction instead (`limits.rs`). One
    /// statement per queue, never a second round: `SKIP LOCKED` reads past
    /// rows other claimers hold, so fewer tasks than asked means no more
    /// were free (a row another claimer took between this statement's
    /// snapshot and its lock is left out, and the next claim finds the
    /// rest). A second round when a claim came back short made every idle
    /// pickup two statements.
    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let mut queues: Vec<(QueueName, usize)> = Vec::with_capacity(plan.shares.len());
        for share in &plan.shares {
            match queues.iter_mut().find(|(q, _)| *q == share.queue) {
                Some((_, quota)) => *quota = quota.saturating_add(share.quota),
                None => queues.push((share.queue.clone(), share.quota)),
            }
        }
        let mut left = plan.limit.min(MAX_BATCH);
        let mut claimed: Vec<TaskRecord> = Vec::new();
        // Queues that gave all they were asked for: the fill asks them again.
        let mut more: Vec<QueueName> = Vec::new();
        let mut busy: Vec<QueueName> = Vec::new();
        for (queue, quota) in &queues {
            let upto = (*quota).min(left);
            if upto == 0 {
                more.push(queue.clone());
                continue;
            }
            let (took, outcome) = self.claim_one(ns, worker, queue, upto, lease).await?;
            left -= took.len().min(left);
            match outcome {
                executor_sql::limits::Outcome::Full => more.push(queue.clone()),
                executor_sql::limits::Outcome::Busy => busy.push(queue.clone()),
                executor_sql::limits::Outcome::Done | executor_sql::limits::Outcome::Unlimited => {}
            }
            claimed.extend(took);
        }
        for queue in more {
            if left == 0 {
                break;
            }
            let (took, outcome) = self.claim_one(ns, worker, &queue, left, lease).await?;
            if outcome == executor_sql::limits::Outcome::Busy {
                busy.push(queue);
            }
            left -= took.len().min(left);
            claimed.extend(took);
        }
        // A limited queue another claimer was claiming: its transaction is a
        // few round trips, so a claim that got nothing else tries again
        // shortly rather than leave its caller to spin.
        if claimed.is_empty() {
            for pause_ms in [2, 8, 32] {
                if busy.is_empty() || left == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                let mut still = Vec::new();
                for queue in busy {
                    let (took, outcome) = self.claim_limited(ns, worker, &queue, left, lease).await?;
                    if outcome == executor_sql::limits::Outcome::Busy {
                        still.push(queue);
                    }
                    left -= took.len().min(left);
                    claimed.extend(took);
                }
                busy = still;
                if !claimed.is_empty() {
                    break;
                }
            }
        }
        Ok(claimed)
    }

    /// Renews every lease in one UPDATE (only rows still `RUNNING` with the
    /// lease's fence, so a lost lease is never revived: no two live attempts) that
    /// returns the rows it renewed with their cancel flag: a lease not
    /// returned is lost.
    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        let mut out = Heartbeat::default();
        for chunk in leases.chunks(MAX_BATCH) {
            // Ids as an array the rows are looked up by, each row's fence
            // found by its position: no join for the planner to turn into a
            // walk of the namespace when its statistics are stale.
            let rows = sqlx::query(sql!("claim/renew_leases"))
                .bind(ns.as_str())
                .bind(ms(lease))
                .bind(chunk.iter().map(|l| l.id.as_str().to_owned()).collect::<Vec<_>>())
                .bind(chunk.iter().map(|l| big(l.fence)).collect::<Vec<_>>())
                .fetch_all_on(&self.conns)
                .await
                .map_err(error::storage)?;
            let mut renewed = std::collections::HashMap::with_capacity(rows.len());
            for r in rows {
                let id: String = r.try_get("id").map_err(error::storage)?;
                let cancel: bool = r.try_get("cancel_requested").map_err(error::storage)?;
                renewed.insert(id, cancel);
            }
            for l in chunk {
                match renewed.get(l.id.as_str()) {
                    Some(true) => out.cancel_requested.push(l.id.clone()),
                    Some(false) => {}
                    None => out.lost.push(l.id.clone()),
                }
            }
        }
        Ok(out)
    }
}
