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
use sqlx::{MySql, Row};
use tokio::sync::Notify;

use crate::{
    conn::{Conns, RunOn},
    error,
    sql::{self, clip_error, ms, padded, sql},
};

/// The one UPDATE behind every finish: it changes the row only while the
/// task is `RUNNING` with the lease's fence, so a worker that lost its lease
/// cannot overwrite a newer attempt. Every duration bound here
/// was validated ([`Finish::validate`]), so `now + delay` stays in range.
const FINISH_SQL: &str = sql!("finish/finish");

/// [`FINISH_SQL`] for a retry: the same change, and the attempt that ended
/// appended to the attempt log in the same statement. Only retries pay for
/// the log; completions run `FINISH_SQL` or the batch UPDATE, as before.
/// Binds: worker, logged error, delay, last error, task, fence.
const RETRY_SQL: &str = sql!("finish/retry");

fn finish_query<'a>(
    ns: &'a Namespace,
    lease: &'a Lease,
    finish: &'a Finish,
) -> sqlx::query::Query<'a, MySql, sqlx::mysql::MySqlArguments> {
    if let Finish::Retry { delay, error } = finish {
        let error = clip_error(error).into_owned();
        let q = sqlx::query(RETRY_SQL)
            .bind(lease.worker.as_str())
            .bind(error.clone())
            .bind(ms(*delay))
            .bind(error);
        return crate::sql::bind_task(q, ns, &lease.id).bind(lease.fence);
    }
    let target = finish.target();
    let delay = match finish {
        Finish::Retry { delay, .. } => Some(ms(*delay)),
        Finish::Postponed { delay, .. } => Some(ms(*delay)),
        Finish::Released => Some(0),
        _ => None,
    };
    let q = sqlx::query(FINISH_SQL)
        .bind(delay)
        .bind(delay)
        .bind(target.is_terminal())
        .bind(finish.error().map(|e| clip_error(e).into_owned()))
        .bind(matches!(finish, Finish::Released | Finish::Postponed { .. }))
        .bind(target.as_str());
    crate::sql::bind_task(q, ns, &lease.id).bind(lease.fence)
}

/// This dialect's finish statements, on the connections and the wake-up
/// alone, so the group-commit batcher can hold them without holding the
/// storage.
#[derive(Clone)]
pub(crate) struct Finisher {
    pub(crate) conns: Arc<Conns>,
    pub(crate) wake: Arc<Notify>,
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
        let done = error::retry_lock_conflicts(|| async move {
            let ids = padded(leases.iter().map(|l| l.id.as_str()));
            let text = sql::slice(sql!("finish/complete_batch"), "ids", ids.len());
            let text = sql::slice(&text, "leases", leases.len());
            let mut q = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &ids);
            for lease in leases {
                q = q.bind(lease.id.as_str().to_owned()).bind(lease.fence);
            }
            q.execute_on(&self.conns).await.map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected())
    }

    async fn read_batch(&self, ns: &Namespace, leases: &[&Lease]) -> Result<Vec<(String, u64, String)>> {
        let ids = padded(leases.iter().map(|l| l.id.as_str()));
        let text = sql::slice(sql!("finish/read_batch"), "ids", ids.len());
        let rows = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &ids)
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("id").map_err(error::storage)?,
                    r.try_get("fence").map_err(error::storage)?,
                    r.try_get("state").map_err(error::storage)?,
                ))
            })
            .collect()
    }

    /// Back to waiting, or out of `RUNNING`: either may be work for an idle
    /// claimer of this process (a freed slot of a queue with a concurrency
    /// limit, which its wait leaves out while full). Other processes find
    /// it at their next poll: MySQL has no notifications.
    fn woken(&self, _: &Namespace, _: &[TaskState]) {
        self.wake.notify_waiters();
    }
}
