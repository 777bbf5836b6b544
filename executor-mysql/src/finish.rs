//! Ending attempts: one autocommit statement conditional on the fence per
//! task, or one for a batch of completions. No transaction: a worker stopped
//! between two statements holds no lock, so the reaper and other workers
//! never wait on it (invariant 9). Concurrent `finish` calls of one process
//! share those batches (group commit).

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use executor_core::{
    Error, Namespace, Result, TaskState,
    storage::{Finish, Lease},
};
use sqlx::{MySql, Row};
use tokio::sync::Notify;

use crate::{
    MySqlStorage,
    conn::{Conns, RunOn},
    error,
    sql::{self, clip_error, ms, padded, sql},
};

/// Below this many items a batch is cheaper as single statements.
const BATCH_MIN: usize = 3;
/// Most items in one batch statement.
const MAX_BATCH: usize = 1000;

/// The one UPDATE behind every finish: it changes the row only while the
/// task is `RUNNING` with the lease's fence, so a worker that lost its lease
/// cannot overwrite a newer attempt (invariant 2). Every duration bound here
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

impl MySqlStorage {
    /// Concurrent finishes of this process share one batch (group commit):
    /// an idle process sends each at once, a busy one sends every finish
    /// that arrived while the previous batch was in flight. Each caller gets
    /// its own answer; one bad finish fails only its caller (invariant 7).
    pub(crate) async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        // The batcher holds the connections, not the storage: it ends when
        // the last clone of the storage (and so the queue) is dropped.
        let (conns, wake) = (Arc::clone(&self.conns), Arc::clone(&self.wake));
        let start = move || {
            move |ns: Namespace, items: Vec<(Lease, Finish)>| {
                let (conns, wake) = (Arc::clone(&conns), Arc::clone(&wake));
                async move { finish_many_on(&conns, &wake, &ns, items).await }
            }
        };
        match self.finishes.call(ns, (lease.clone(), finish), start) {
            Ok(answer) => answer.await,
            // No runtime to batch on (it is shutting down): send it alone,
            // boxed so this rare branch does not size every finish future.
            Err((lease, finish)) => Box::pin(finish_on(&self.conns, &self.wake, ns, &lease, finish)).await,
        }
    }

    /// Ends many attempts; each item gets its own answer and no item can fail
    /// another (invariant 7):
    ///
    /// - each item is validated first; an invalid one is refused alone;
    /// - the completions of tasks named once go in one UPDATE conditional on
    ///   every item's fence; when it changes fewer rows than items, one read
    ///   tells which landed;
    /// - every other item (a retry, a failure, a task named twice) is its own
    ///   statement, in the order given;
    /// - when a batch statement fails for any reason, its items are sent one
    ///   by one, so the one that cannot be written gets the error alone.
    pub(crate) async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        finish_many_on(&self.conns, &self.wake, ns, items).await
    }
}

/// Ends one attempt. No row changed means the lease is stale: the task
/// moved on, or is gone (deleted, trimmed); either way this worker's write
/// is refused.
async fn finish_on(
    conns: &Conns,
    wake: &Notify,
    ns: &Namespace,
    lease: &Lease,
    finish: Finish,
) -> Result<TaskState> {
    finish.validate()?;
    let f = &finish;
    let done = error::retry_lock_conflicts(|| async move {
        finish_query(ns, lease, f).execute_on(conns).await.map_err(error::storage)
    })
    .await?;
    if done.rows_affected() == 0 {
        return Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence });
    }
    // Back to waiting, or out of RUNNING: either may be work for an idle
    // claimer of this process (a freed slot of a queue with a concurrency
    // limit, which its wait leaves out while full). Other processes find
    // it at their next poll: MySQL has no notifications.
    wake.notify_waiters();
    Ok(finish.target())
}

/// [`MySqlStorage::finish_many`] on the connections and the wake-up alone,
/// so the group-commit batcher of [`MySqlStorage::finish`] can hold them
/// without holding the storage.
async fn finish_many_on(
    conns: &Conns,
    wake: &Notify,
    ns: &Namespace,
    items: Vec<(Lease, Finish)>,
) -> Result<Vec<Result<TaskState>>> {
    let mut out: Vec<Option<Result<TaskState>>> = Vec::with_capacity(items.len());
    let mut named: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    for (lease, _) in &items {
        *named.entry(lease.id.as_str()).or_default() += 1;
    }
    let mut batch: Vec<usize> = Vec::new();
    let mut singles: Vec<usize> = Vec::new();
    for (i, (lease, f)) in items.iter().enumerate() {
        match f.validate() {
            Err(e) => out.push(Some(Err(e))),
            Ok(()) => {
                out.push(None);
                if matches!(f, Finish::Completed) && named.get(lease.id.as_str()) == Some(&1) {
                    batch.push(i);
                } else {
                    singles.push(i);
                }
            }
        }
    }
    if batch.len() < BATCH_MIN {
        singles.append(&mut batch);
        singles.sort_unstable();
    }
    for chunk in batch.chunks(MAX_BATCH) {
        let leases: Vec<&Lease> = chunk.iter().map(|&i| &items[i].0).collect();
        match complete_batch(conns, ns, &leases).await {
            Ok(answers) => {
                for (&i, answer) in chunk.iter().zip(answers) {
                    match answer {
                        // Still current but not written (cannot happen
                        // unless the row changed under the statement): alone.
                        Landed::Retry => singles.push(i),
                        Landed::Yes => out[i] = Some(Ok(TaskState::Completed)),
                        Landed::Stale => {
                            let lease = &items[i].0;
                            out[i] =
                                Some(Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence }));
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, items = chunk.len(), "batch finish failed; finishing its items one by one");
                singles.extend_from_slice(chunk);
            }
        }
    }
    singles.sort_unstable();
    for i in singles {
        let (lease, f) = &items[i];
        out[i] = Some(finish_on(conns, wake, ns, lease, f.clone()).await);
    }
    if out.iter().any(|r| matches!(r, Some(Ok(_)))) {
        wake.notify_waiters();
    }
    Ok(out
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| Err(Error::storage(std::io::Error::other("finish got no answer"), true)))
        })
        .collect())
}

/// Whether one completion of a batch landed.
enum Landed {
    Yes,
    Stale,
    Retry,
}

/// Completes every lease in one UPDATE conditional on each fence. When it
/// changed every row, each landed; otherwise one read by primary key tells:
/// `COMPLETED` with the lease's fence landed (now, or by an earlier finish
/// of the same lease, which is the same outcome), `RUNNING` with the fence
/// is still current, anything else (or no row) is stale.
async fn complete_batch(conns: &Conns, ns: &Namespace, leases: &[&Lease]) -> Result<Vec<Landed>> {
    let changed = error::retry_lock_conflicts(|| async move {
        let ids = padded(leases.iter().map(|l| l.id.as_str()));
        let text = sql::slice(sql!("finish/complete_batch"), "ids", ids.len());
        let text = sql::slice(&text, "leases", leases.len());
        let mut q = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &ids);
        for lease in leases {
            q = q.bind(lease.id.as_str().to_owned()).bind(lease.fence);
        }
        q.execute_on(conns).await.map_err(error::storage)
    })
    .await?
    .rows_affected();
    if changed == leases.len() as u64 {
        return Ok(leases.iter().map(|_| Landed::Yes).collect());
    }
    let ids = padded(leases.iter().map(|l| l.id.as_str()));
    let text = sql::slice(sql!("finish/read_batch"), "ids", ids.len());
    let rows = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &ids)
        .fetch_all_on(conns)
        .await
        .map_err(error::storage)?;
    let mut current: HashMap<String, (u64, String)> = HashMap::with_capacity(rows.len());
    for r in rows {
        let id: String = r.try_get("id").map_err(error::storage)?;
        current.insert(
            id,
            (r.try_get("fence").map_err(error::storage)?, r.try_get("state").map_err(error::storage)?),
        );
    }
    let mut seen = HashSet::new();
    Ok(leases
        .iter()
        .map(|lease| match current.get(lease.id.as_str()) {
            Some((fence, state)) if *fence == lease.fence && seen.insert(&lease.id) => {
                if state == TaskState::Completed.as_str() {
                    Landed::Yes
                } else if state == TaskState::Running.as_str() {
                    Landed::Retry
                } else {
                    Landed::Stale
                }
            }
            _ => Landed::Stale,
        })
        .collect())
}
