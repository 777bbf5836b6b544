//! Fleet-wide queue limits: concurrency and a token
//! bucket per queue, kept in `reliable_executor_queues` and enforced inside
//! the claim.
//!
//! A queue with limits is claimed only in a short transaction that first
//! locks the queue's row (`FOR UPDATE NOWAIT`), then counts the queue's
//! `RUNNING` tasks, refills and spends the bucket, claims what both allow
//! and commits. Every claim of the queue holds that row lock from before
//! its count until after its UPDATE is committed, so claims of one limited
//! queue are serialised and each count sees every earlier claim: two
//! claimers can never both see N - 1 running and both claim. The plain
//! claim statement never takes a limited queue's tasks (it reads the row
//! and skips such queues). Unlimited queues keep the autocommit claim.
//!
//! The one transaction in this crate that waits for the client while it
//! holds locks, so a stopped holder is bounded (a stopped process holds nothing others need): the session's
//! `wait_timeout` is 2 s (`sql/limits/begin.sql`) for the transaction's length, and
//! the server closes a connection idle that long, rolling the transaction
//! back and releasing the row. Other claimers never wait for the row
//! (`NOWAIT`): they skip the queue for that claim.

use executor_sql::limits::{Outcome, Stored};
use executor_sql::{
    row::{self, to_error},
    stmt::Value,
};
use std::{collections::HashMap, time::Duration};

use executor_core::{Namespace, QueueName, Result, TaskRecord, WorkerId};
use sqlx::{Row, mysql::MySqlRow};

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    sql::{self, MAX_ATTEMPTS_COLUMN, MAX_FENCE_COLUMN, sql},
};

/// Opens the limited claim's transaction with the bound on idleness (a
/// healthy claim is idle between its statements for a round trip), and
/// keeps the session's own `wait_timeout` to put back.
const BEGIN: &str = sql!("limits/begin");
/// Commits and puts the session's `wait_timeout` back.
const COMMIT: &str = sql!("limits/commit");
/// As [`COMMIT`], undoing.
const ROLLBACK: &str = sql!("limits/rollback");

/// Reads a queue's row.
fn read_stored(r: &MySqlRow) -> Result<Stored> {
    Ok(Stored {
        paused: r.try_get("paused").map_err(error::storage)?,
        concurrency: r.try_get("concurrency").map_err(error::storage)?,
        rate_starts: r.try_get("rate_starts").map_err(error::storage)?,
        rate_per_ms: r.try_get("rate_per_ms").map_err(error::storage)?,
        rate_burst: r.try_get("rate_burst").map_err(error::storage)?,
        tokens: r.try_get("tokens").map_err(error::storage)?,
        tokens_at: r.try_get("tokens_at").map_err(error::storage)?,
        throttled: r.try_get("throttled").map_err(error::storage)?,
    })
}

/// What one limited claim took and how it ended.
pub(crate) struct Take {
    pub(crate) tasks: Vec<TaskRecord>,
    pub(crate) outcome: Outcome,
}

impl Take {
    fn nothing(outcome: Outcome) -> Self {
        Self { tasks: Vec::new(), outcome }
    }
}

impl MySqlDialect {
    /// Claims up to `upto` due tasks of the limited `queue` within its
    /// limits, in one transaction on one connection (see the module docs):
    ///
    /// 1. `SELECT ... FROM queues WHERE ns = ? AND queue = ? FOR UPDATE
    ///    NOWAIT`: the queue's row, locked until the commit, and the server's
    ///    now; held by another claimer, the queue is [`Outcome::Busy`];
    /// 2. with a concurrency limit, its `RUNNING` tasks counted on
    ///    `ix_lease` (a statement of its own, started after the lock is
    ///    granted, so under READ COMMITTED it sees every claim committed
    ///    before);
    /// 3. the allowance: the limit less the running tasks, and whole tokens
    ///    of the refilled bucket;
    /// 4. the candidates (`FOR UPDATE SKIP LOCKED`, one more than allowed,
    ///    which tells whether the limit cut the claim short) and the UPDATE
    ///    that claims them, as in the plain claim;
    /// 5. the bucket and `throttled` written back, the claimed rows read
    ///    back, commit.
    ///
    /// Rows that cannot be claimed (a counter at its column's maximum, a
    /// priority out of range, a row that does not parse) are moved to
    /// `ERROR` after the commit, as the plain claim does.
    pub(crate) async fn claim_limited(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        queue: &QueueName,
        upto: usize,
        lease: Duration,
    ) -> Result<Take> {
        let mut c = self.conns.get().await.map_err(error::storage)?;
        sqlx::raw_sql(BEGIN).execute(&mut *c).await.map_err(error::storage)?;
        let locked = sqlx::query(sql!("limits/lock_queue"))
            .bind(ns.as_str())
            .bind(queue.as_str())
            .fetch_optional(&mut *c)
            .await;
        let row = match locked {
            Ok(row) => row,
            // MariaDB answers NOWAIT with 1205, MySQL 8 with 3572.
            Err(e) if matches!(error::mysql_number(&e), Some(1205 | 3572)) => {
                sqlx::raw_sql(ROLLBACK).execute(&mut *c).await.map_err(error::storage)?;
                c.done();
                return Ok(Take::nothing(Outcome::Busy));
            }
            Err(e) => return Err(error::storage(e)),
        };
        let Some(row) = row else {
            sqlx::raw_sql(ROLLBACK).execute(&mut *c).await.map_err(error::storage)?;
            c.done();
            return Ok(Take::nothing(Outcome::Unlimited));
        };
        let stored = read_stored(&row)?;
        let now: i64 = row.try_get("now").map_err(error::storage)?;
        let limits = match stored.limits() {
            _ if stored.paused => None,
            _ if !stored.has_limits() => {
                sqlx::raw_sql(ROLLBACK).execute(&mut *c).await.map_err(error::storage)?;
                c.done();
                return Ok(Take::nothing(Outcome::Unlimited));
            }
            Ok(limits) => Some(limits),
            Err(reason) => {
                // Fail closed: a hand-edited limit may guard something
                // fragile. Tasks wait until the limits are set again.
                tracing::warn!(%ns, %queue, %reason, "corrupt queue limits; the queue is not claimed until they are set again");
                None
            }
        };
        let Some(limits) = limits else {
            sqlx::raw_sql(ROLLBACK).execute(&mut *c).await.map_err(error::storage)?;
            c.done();
            return Ok(Take::nothing(Outcome::Done));
        };

        let mut allowed = upto;
        if let Some(n) = limits.concurrency {
            let running: i64 = sqlx::query(sql!("limits/count_running"))
                .bind(ns.as_str())
                .bind(queue.as_str())
                .fetch_one(&mut *c)
                .await
                .map_err(error::storage)?
                .try_get("running")
                .map_err(error::storage)?;
            let left = u64::from(n).saturating_sub(u64::try_from(running).unwrap_or(0));
            allowed = allowed.min(usize::try_from(left).unwrap_or(usize::MAX));
        }
        let mut tokens = None;
        if let Some(rate) = &limits.rate {
            let t = rate.bucket_at(stored.tokens, stored.tokens_at, now);
            // Whole tokens only; `t` is within 0..=burst (a u32).
            allowed = allowed.min(t.floor() as usize);
            tokens = Some(t);
        }

        // One more than allowed: whether more were due than the limit let
        // this claim take.
        let look = u32::try_from(allowed.saturating_add(1)).unwrap_or(u32::MAX);
        let rows = sqlx::query(sql!("limits/select_candidates"))
            .bind(ns.as_str())
            .bind(queue.as_str())
            .bind(look)
            .fetch_all(&mut *c)
            .await
            .map_err(error::storage)?;
        let mut candidates: Vec<String> = Vec::with_capacity(rows.len());
        let mut corrupt: Vec<(String, String)> = Vec::new();
        for r in &rows {
            let id = row::raw_id(r);
            let attempts: u32 = r.try_get("attempts").map_err(error::storage)?;
            let fence: u64 = r.try_get("fence").map_err(error::storage)?;
            let priority: u8 = r.try_get("priority").map_err(error::storage)?;
            if attempts == MAX_ATTEMPTS_COLUMN || fence == MAX_FENCE_COLUMN {
                corrupt
                    .push((id, format!("attempts {attempts} or fence {fence} is at its column's maximum")));
            } else if priority > executor_core::queue::MAX_PRIORITY {
                corrupt.push((
                    id,
                    format!("priority {priority} is outside 0..={}", executor_core::queue::MAX_PRIORITY),
                ));
            } else {
                candidates.push(id);
            }
        }
        let more_due = candidates.len() > allowed;
        candidates.truncate(allowed);
        let cut = allowed < upto && more_due;

        let token = sql::token();
        let mut claimed_rows: Vec<MySqlRow> = Vec::new();
        if !candidates.is_empty() {
            crate::claim::claim_update(ns, worker, lease, token, &candidates, None)
                .execute(&mut *c)
                .await
                .map_err(error::storage)?;
            claimed_rows = crate::claim::claimed_read(ns, token, &candidates)
                .fetch_all(&mut *c)
                .await
                .map_err(error::storage)?;
        }
        let spent = claimed_rows.len();
        if tokens.is_some() || cut {
            let left = tokens.map_or(stored.tokens, |t| (t - spent as f64).max(0.0));
            sqlx::query(sql!("limits/spend_tokens"))
                .bind(if left.is_finite() { left } else { 0.0 })
                .bind(if tokens.is_some() { now } else { stored.tokens_at })
                .bind(u64::from(cut))
                .bind(ns.as_str())
                .bind(queue.as_str())
                .execute(&mut *c)
                .await
                .map_err(error::storage)?;
        }
        sqlx::raw_sql(COMMIT).execute(&mut *c).await.map_err(error::storage)?;
        c.done();

        for (id, reason) in &corrupt {
            to_error(self, ns, id, Value::OptUint(None), reason).await?;
        }
        let position: HashMap<&str, usize> =
            candidates.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
        claimed_rows.sort_by_key(|r| {
            r.try_get::<&str, _>("id").ok().and_then(|id| position.get(id).copied()).unwrap_or(usize::MAX)
        });
        let mut tasks = Vec::with_capacity(claimed_rows.len());
        for r in &claimed_rows {
            match row::task::<MySqlDialect>(r) {
                Ok(task) => tasks.push(task),
                Err(reason) => {
                    to_error(self, ns, &row::raw_id(r), Value::OptUint(Some(token)), &reason).await?
                }
            }
        }
        let outcome = if spent == upto && !cut { Outcome::Full } else { Outcome::Done };
        Ok(Take { tasks, outcome })
    }
}

/// Every row of `ns` in the queues table.
pub(crate) async fn rows(s: &MySqlDialect, ns: &Namespace) -> Result<Vec<(String, Stored)>> {
    let rows = sqlx::query(sql!("limits/rows"))
        .bind(ns.as_str())
        .fetch_all_on(&s.conns)
        .await
        .map_err(error::storage)?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let name: String = r.try_get("queue").map_err(error::storage)?;
        out.push((name, read_stored(r)?));
    }
    Ok(out)
}
