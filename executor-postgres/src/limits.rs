//! Fleet-wide queue limits: concurrency and a token bucket per queue, kept
//! in `reliable_executor_queues` and enforced inside the claim.
//!
//! A queue with limits is claimed only in a short transaction that first
//! locks the queue's row (`FOR UPDATE NOWAIT`), then counts the queue's
//! `RUNNING` tasks, refills and spends the bucket, claims what both allow
//! and commits. Every claim of the queue holds that row lock from before
//! its count until after its UPDATE is committed, and each statement of
//! the transaction reads a fresh snapshot (READ COMMITTED), so claims of
//! one limited queue are serialised and each count sees every earlier
//! claim: two claimers can never both see N - 1 running and both claim.
//! The plain claim statement never takes a limited queue's tasks (it reads
//! the row and skips such queues). Unlimited queues keep the autocommit
//! claim.
//!
//! The one transaction in this crate that waits for the client while it
//! holds locks, so a stopped holder is bounded (a stopped process holds nothing others need): it sets
//! `idle_in_transaction_session_timeout` to 2 s for itself, and the server
//! ends a session idle that long inside it, rolling the transaction back
//! and releasing the row. Other claimers never wait for the row
//! (`NOWAIT`): they skip the queue for that claim.

use std::time::Duration;

use executor_core::{Namespace, QueueName, Result, TaskRecord, WorkerId};
use executor_sql::limits::{Outcome, Stored};
use sqlx::{Row, postgres::PgRow};

use crate::{
    PostgresDialect,
    claim::{read_claimed, sort_claim_order},
    conn::RunOn,
    error,
    sql::{ms, sql},
};

/// Opens the limited claim's transaction with the bound on idleness.
const BEGIN: &str = sql!("limits/begin");
/// Ends it, taking the claims.
const COMMIT: &str = sql!("limits/commit");
/// Ends it, undoing.
const ROLLBACK: &str = sql!("limits/rollback");

/// Reads a queue's row.
fn read_stored(r: &PgRow) -> Result<Stored> {
    let get_u32 = |name: &'static str| -> Result<Option<u32>> {
        let v: Option<i32> = r.try_get(name).map_err(error::storage)?;
        // A negative value (a hand-edited row) reads as 0: out of range,
        // so the limits are corrupt and the queue fails closed.
        Ok(v.map(|v| u32::try_from(v).unwrap_or(0)))
    };
    let per: Option<i64> = r.try_get("rate_per_ms").map_err(error::storage)?;
    let throttled: i64 = r.try_get("throttled").map_err(error::storage)?;
    Ok(Stored {
        paused: r.try_get("paused").map_err(error::storage)?,
        concurrency: get_u32("concurrency")?,
        rate_starts: get_u32("rate_starts")?,
        rate_per_ms: per.map(|v| u64::try_from(v).unwrap_or(0)),
        rate_burst: get_u32("rate_burst")?,
        tokens: r.try_get("tokens").map_err(error::storage)?,
        tokens_at: r.try_get("tokens_at").map_err(error::storage)?,
        throttled: u64::try_from(throttled).unwrap_or(0),
    })
}

impl PostgresDialect {
    /// Claims up to `upto` due tasks of the limited `queue` within its
    /// limits, in one transaction on one connection (see the module docs):
    ///
    /// 1. `SELECT ... FROM queues WHERE ns = $1 AND queue = $2 FOR UPDATE
    ///    NOWAIT`: the queue's row, locked until the commit, and the server's
    ///    now; held by another claimer, the queue is [`Outcome::Busy`];
    /// 2. with a concurrency limit, its `RUNNING` tasks counted on
    ///    `ix_running` (a statement of its own, so under READ COMMITTED it
    ///    sees every claim committed before the lock was granted);
    /// 3. the allowance: the limit less the running tasks, and whole tokens
    ///    of the refilled bucket;
    /// 4. the claim of what they allow, one statement as the plain claim,
    ///    and, when the limit allowed less than asked, whether other due
    ///    tasks wait (the limit cut the claim short: `throttled`);
    /// 5. the bucket and `throttled` written back, commit.
    pub(crate) async fn claim_limited(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        queue: &QueueName,
        upto: usize,
        lease: Duration,
    ) -> Result<(Vec<TaskRecord>, Outcome)> {
        let mut c = self.conns.get().await.map_err(error::storage)?;
        sqlx::raw_sql(BEGIN).execute(&mut *c).await.map_err(error::storage)?;
        let locked = sqlx::query(sql!("limits/lock_queue"))
            .bind(ns.as_str())
            .bind(queue.as_str())
            .fetch_optional(&mut *c)
            .await;
        let row = match locked {
            Ok(row) => row,
            Err(e) if error::is_lock_not_available(&e) => {
                sqlx::raw_sql(ROLLBACK).execute(&mut *c).await.map_err(error::storage)?;
                c.done();
                return Ok((Vec::new(), Outcome::Busy));
            }
            Err(e) => return Err(error::storage(e)),
        };
        let Some(row) = row else {
            sqlx::raw_sql(ROLLBACK).execute(&mut *c).await.map_err(error::storage)?;
            c.done();
            return Ok((Vec::new(), Outcome::Unlimited));
        };
        let stored = read_stored(&row)?;
        let now: i64 = row.try_get("now").map_err(error::storage)?;
        let limits = match stored.limits() {
            _ if stored.paused => None,
            _ if !stored.has_limits() => {
                sqlx::raw_sql(ROLLBACK).execute(&mut *c).await.map_err(error::storage)?;
                c.done();
                return Ok((Vec::new(), Outcome::Unlimited));
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
            return Ok((Vec::new(), Outcome::Done));
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

        // The claim itself, as the plain one (by `ctid`, see `claim.rs`),
        // then whether more were due than the limit let it take.
        let mut claimed_rows: Vec<PgRow> = Vec::new();
        if allowed > 0 {
            claimed_rows = sqlx::query(sql!("limits/claim_queue"))
                .bind(ns.as_str())
                .bind(queue.as_str())
                .bind(i64::try_from(allowed).unwrap_or(i64::MAX))
                .bind(ms(lease))
                .bind(worker.as_str())
                .fetch_all(&mut *c)
                .await
                .map_err(error::storage)?;
        }
        let cut = allowed < upto && {
            // Inside the transaction the rows just claimed are RUNNING: any
            // other due row is one the limit held back.
            let more: bool = sqlx::query(sql!("limits/more_due"))
                .bind(ns.as_str())
                .bind(queue.as_str())
                .fetch_one(&mut *c)
                .await
                .map_err(error::storage)?
                .try_get("more")
                .map_err(error::storage)?;
            more
        };

        let spent = claimed_rows.len();
        if tokens.is_some() || cut {
            let left = tokens.map_or(stored.tokens, |t| (t - spent as f64).max(0.0));
            sqlx::query(sql!("limits/spend_tokens"))
                .bind(if left.is_finite() { left } else { 0.0 })
                .bind(if tokens.is_some() { now } else { stored.tokens_at })
                .bind(i64::from(cut))
                .bind(ns.as_str())
                .bind(queue.as_str())
                .execute(&mut *c)
                .await
                .map_err(error::storage)?;
        }
        sqlx::raw_sql(COMMIT).execute(&mut *c).await.map_err(error::storage)?;
        c.done();

        let mut tasks = Vec::with_capacity(claimed_rows.len());
        for r in &claimed_rows {
            read_claimed(self, ns, r, &mut tasks).await?;
        }
        sort_claim_order(&mut tasks);
        let outcome = if spent == upto && !cut { Outcome::Full } else { Outcome::Done };
        Ok((tasks, outcome))
    }
}

/// Every row of `ns` in the queues table.
pub(crate) async fn rows(s: &PostgresDialect, ns: &Namespace) -> Result<Vec<(String, Stored)>> {
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
