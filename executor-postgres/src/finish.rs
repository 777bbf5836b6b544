//! Ending attempts: this dialect's statements for the SQL core's finish
//! (`executor_sql::finish`: one autocommit statement conditional on the
//! fence per task, or one for a batch of completions, shared by concurrent
//! finishes).

use std::sync::Arc;

use executor_core::{
    Namespace, Result, TaskState,
    storage::{Finish, Lease},
};
use executor_sql::finish::FinishStatements;
use sqlx::Row;

use crate::{
    conn::{Conns, RunOn},
    error,
    sql::{big, clip_error, ms, sql},
    wake::Wakes,
};

/// The one UPDATE behind every finish: it changes the row only while the
/// task is `RUNNING` with the lease's fence, so a worker that lost its lease
/// cannot overwrite a newer attempt. Every duration bound here
/// was validated ([`Finish::validate`]), so `now + delay` stays in range.
const FINISH_SQL: &str = sql!("finish/finish");

/// [`FINISH_SQL`] for a retry: the same change, and the attempt that ended
/// appended to the attempt log in the same statement. Only retries pay for
/// the log; completions run `FINISH_SQL` or the batch UPDATE, as before.
const RETRY_SQL: &str = sql!("finish/retry");

fn finish_query<'a>(
    ns: &'a Namespace,
    lease: &'a Lease,
    finish: &'a Finish,
) -> sqlx::query::Query<'a, sqlx::Postgres, sqlx::postgres::PgArguments> {
    if let Finish::Retry { delay, error } = finish {
        return sqlx::query(RETRY_SQL)
            .bind(lease.worker.as_str())
            .bind(clip_error(error).into_owned())
            .bind(ms(*delay))
            .bind(ns.as_str())
            .bind(lease.id.as_str())
            .bind(big(lease.fence));
    }
    let target = finish.target();
    let delay = match finish {
        Finish::Retry { delay, .. } => Some(ms(*delay)),
        Finish::Postponed { delay, .. } => Some(ms(*delay)),
        Finish::Released => Some(0),
        _ => None,
    };
    sqlx::query(FINISH_SQL)
        .bind(delay)
        .bind(target.is_terminal())
        .bind(finish.error().map(|e| clip_error(e).into_owned()))
        .bind(matches!(finish, Finish::Released | Finish::Postponed { .. }))
        .bind(target.as_str())
        .bind(ns.as_str())
        .bind(lease.id.as_str())
        .bind(big(lease.fence))
}

/// This dialect's finish statements, on the connections and the wake-up
/// alone, so the group-commit batcher can hold them without holding the
/// storage.
#[derive(Clone)]
pub(crate) struct Finisher {
    pub(crate) conns: Arc<Conns>,
    pub(crate) wakes: Arc<Wakes>,
}

impl FinishStatements for Finisher {
    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: &Finish) -> Result<u64> {
        let done = error::retry_lock_conflicts(|| async move {
            finish_query(ns, lease, finish).execute_on(&self.conns).await.map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected())
    }

    async fn complete_batch(&self, ns: &Namespace, leases: &[&Lease]) -> Result<u64> {
        let ids: Vec<String> = leases.iter().map(|l| l.id.as_str().to_owned()).collect();
        let fences: Vec<i64> = leases.iter().map(|l| big(l.fence)).collect();
        let (ids, fences) = (&ids, &fences);
        let done = error::retry_lock_conflicts(|| async move {
            // Ids as an array, each row's fence found by its position (see
            // the heartbeat in `claim.rs`).
            sqlx::query(sql!("finish/complete_batch"))
                .bind(ns.as_str())
                .bind(ids)
                .bind(fences)
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected())
    }

    async fn read_batch(&self, ns: &Namespace, leases: &[&Lease]) -> Result<Vec<(String, u64, String)>> {
        let ids: Vec<String> = leases.iter().map(|l| l.id.as_str().to_owned()).collect();
        let rows = sqlx::query(sql!("finish/read_batch"))
            .bind(ns.as_str())
            .bind(&ids)
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        rows.iter()
            .map(|r| {
                let fence: i64 = r.try_get("fence").map_err(error::storage)?;
                Ok((
                    r.try_get("id").map_err(error::storage)?,
                    u64::try_from(fence).unwrap_or(u64::MAX),
                    r.try_get("state").map_err(error::storage)?,
                ))
            })
            .collect()
    }

    /// Only a task back to waiting: other processes, and the freed slots of
    /// limited queues, are told by the triggers' NOTIFY.
    fn woken(&self, ns: &Namespace, states: &[TaskState]) {
        if states.contains(&TaskState::Pending) {
            self.wakes.notify(ns.as_str());
        }
    }
}
