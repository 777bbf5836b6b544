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
use sqlx::Row;

use crate::{
    PostgresStorage,
    conn::{Conns, RunOn},
    error,
    sql::{big, clip_error, ms, sql},
    wake::Wakes,
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
const RETRY_SQL: &str = sql!("finish/retry");

fn finish_query<'a>(
    ns: &'a Namespace,
    lease: &'a Lease,
    finish: &'a Finish,
) -> sqlx::query::Query<'a, sqlx::Postgres, sqlx::postgres::PgArguments> {
    if let Finish::Retry { delay, error } = finish {
        return sqlx::query(RETRY_SQL)
            .bind(lease.worker.as_str())
            .bind(clip_error(error))
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
        .bind(finish.error().map(clip_error))
        .bind(matches!(finish, Finish::Released | Finish::Postponed { .. }))
        .bind(target.as_str())
        .bind(ns.as_str())
        .bind(lease.id.as_str())
        .bind(big(lease.fence))
}

impl PostgresStorage {
    /// Concurrent finishes of this process share one batch (group commit):
    /// an idle process sends each at once, a busy one sends every finish
    /// that arrived while the previous batch was in flight. Each caller gets
    /// its own answer; one bad finish fails only its caller (invariant 7).
    pub(crate) async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        // The batcher holds the connections, not the storage: it ends when
        // the last clone of the storage (and so the queue) is dropped.
        let (conns, wake) = (Arc::clone(&self.conns), Arc::clone(&self.wakes));
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
            Err((lease, finish)) => Box::pin(finish_on(&self.conns, &self.wakes, ns, &lease, finish)).await,
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
        finish_many_on(&self.conns, &self.wakes, ns, items).await
    }
}

/// Ends one attempt. No row changed means the lease is stale: the task
/// moved on, or is gone (deleted, trimmed); either way this worker's write
/// is refused.
async fn finish_on(
    conns: &Conns,
    wake: &Wakes,
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
    let target = finish.target();
    if target == TaskState::Pending {
        wake.notify(ns.as_str());
    }
    Ok(target)
}

/// [`PostgresStorage::finish_many`] on the connections and the wake-up alone,
/// so the group-commit batcher of [`PostgresStorage::finish`] can hold them
/// without holding the storage.
async fn finish_many_on(
    conns: &Conns,
    wake: &Wakes,
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
    if out.iter().any(|r| matches!(r, Some(Ok(TaskState::Pending)))) {
        wake.notify(ns.as_str());
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
    let ids: Vec<String> = leases.iter().map(|l| l.id.as_str().to_owned()).collect();
    let fences: Vec<i64> = leases.iter().map(|l| big(l.fence)).collect();
    let (ids, fences) = (&ids, &fences);
    let changed = error::retry_lock_conflicts(|| async move {
        // Ids as an array, each row's fence found by its position (see the
        // heartbeat in `claim.rs`).
        sqlx::query(sql!("finish/complete_batch"))
            .bind(ns.as_str())
            .bind(ids)
            .bind(fences)
            .execute_on(conns)
            .await
            .map_err(error::storage)
    })
    .await?
    .rows_affected();
    if changed == leases.len() as u64 {
        return Ok(leases.iter().map(|_| Landed::Yes).collect());
    }
    let rows = sqlx::query(sql!("finish/read_batch"))
        .bind(ns.as_str())
        .bind(ids)
        .fetch_all_on(conns)
        .await
        .map_err(error::storage)?;
    let mut current: HashMap<String, (u64, String)> = HashMap::with_capacity(rows.len());
    for r in rows {
        let id: String = r.try_get("id").map_err(error::storage)?;
        let fence: i64 = r.try_get("fence").map_err(error::storage)?;
        current.insert(
            id,
            (u64::try_from(fence).unwrap_or(u64::MAX), r.try_get("state").map_err(error::storage)?),
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
