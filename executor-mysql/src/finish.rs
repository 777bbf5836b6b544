//! Ending attempts: one statement conditional on the fence per task, or one
//! short transaction for a batch.

use std::collections::{HashMap, HashSet};

use executor_core::{Error, Finish, Lease, Namespace, Result, TaskId, TaskState};
use sqlx::{MySql, QueryBuilder, Row};
use tokio::sync::Notify;

use crate::{
    conn::{Conns, RunOn},
    error,
    sql::{clip_error, ms, now_ms, push_in_list, tasks},
};

/// Below this many items a batch is cheaper as single statements.
const BATCH_MIN: usize = 3;

/// The one UPDATE behind every finish: it changes the row only while the
/// task is `RUNNING` with the lease's fence, so a worker that lost its lease
/// cannot overwrite a newer attempt (invariant 2).
const FINISH_SQL: &str = concat!(
    "UPDATE ",
    tasks!(),
    " SET due_at = IF(? IS NULL, due_at, ",
    now_ms!(),
    " + ?), finished_at = IF(?, ",
    now_ms!(),
    ", NULL), last_error = COALESCE(?, last_error), \
     attempts = IF(?, GREATEST(attempts, 1) - 1, attempts), worker = NULL, lease_until = NULL, state = ? \
     WHERE ns = ? AND id = ? AND fence = ? AND state = 'RUNNING'"
);

fn finish_query<'a>(
    ns: &'a Namespace,
    lease: &'a Lease,
    finish: &'a Finish,
) -> sqlx::query::Query<'a, MySql, sqlx::mysql::MySqlArguments> {
    let target = finish.target();
    let delay = match finish {
        Finish::Retry { delay, .. } => Some(ms(*delay)),
        Finish::Released => Some(0),
        _ => None,
    };
    sqlx::query(FINISH_SQL)
        .bind(delay)
        .bind(delay)
        .bind(target.is_terminal())
        .bind(finish.error().map(|e| clip_error(e).into_owned()))
        .bind(matches!(finish, Finish::Released))
        .bind(target.as_str())
        .bind(ns.as_str())
        .bind(lease.id.as_str())
        .bind(lease.fence)
}

/// Ends one attempt. When no row changed, one read tells a stale lease from
/// a task that is gone.
pub(crate) async fn finish(
    conns: &Conns,
    wake: &Notify,
    ns: &Namespace,
    lease: &Lease,
    finish: Finish,
) -> Result<TaskState> {
    let done = finish_query(ns, lease, &finish).execute_on(conns).await.map_err(error::storage)?;
    if done.rows_affected() == 0 {
        let exists = sqlx::query(concat!("SELECT 1 FROM ", tasks!(), " WHERE ns = ? AND id = ?"))
            .bind(ns.as_str())
            .bind(lease.id.as_str())
            .fetch_optional_on(conns)
            .await
            .map_err(error::storage)?;
        return Err(match exists {
            Some(_) => Error::StaleFence { id: lease.id.clone(), fence: lease.fence },
            None => Error::NotFound(lease.id.clone()),
        });
    }
    let target = finish.target();
    if target == TaskState::Pending {
        wake.notify_waiters();
    }
    Ok(target)
}

/// Ends many attempts in one READ COMMITTED transaction. The common batch
/// (every item `Completed`, each task once) is one UPDATE conditional on
/// every item's fence; when it changes every row it is committed, else it
/// is rolled back and the batch goes the exact way: one locking SELECT
/// reads every fence, one UPDATE completes all current `Completed` items,
/// the rarer outcomes get one statement each. Each item gets its own
/// answer.
pub(crate) async fn finish_many(
    conns: &Conns,
    wake: &Notify,
    ns: &Namespace,
    items: Vec<(Lease, Finish)>,
) -> Result<Vec<Result<TaskState>>> {
    if items.len() < BATCH_MIN {
        let mut out = Vec::with_capacity(items.len());
        for (lease, f) in items {
            out.push(finish(conns, wake, ns, &lease, f).await);
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(1000) {
        let done = error::retry_lock_conflicts(|| complete_all(conns, ns, chunk)).await?;
        if done {
            out.extend(chunk.iter().map(|_| Ok(TaskState::Completed)));
        } else {
            out.extend(error::retry_lock_conflicts(|| finish_batch(conns, ns, chunk)).await?);
        }
    }
    if out.iter().any(|r| matches!(r, Ok(TaskState::Pending))) {
        wake.notify_waiters();
    }
    Ok(out)
}

/// `UPDATE` to `COMPLETED` of these tasks of `ns`; the caller adds any
/// further condition.
fn complete_query<'a>(ns: &Namespace, ids: impl IntoIterator<Item = &'a str>) -> QueryBuilder<MySql> {
    let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!(
        "UPDATE ",
        tasks!(),
        " SET finished_at = ",
        now_ms!(),
        ", worker = NULL, lease_until = NULL, state = 'COMPLETED' WHERE ns = "
    ));
    qb.push_bind(ns.as_str().to_owned()).push(" AND id IN ");
    push_in_list(&mut qb, ids);
    qb
}

/// The fast way for a batch that only completes tasks, each once: one
/// UPDATE conditional on each item's fence. True (committed) when it
/// changed every row; false (rolled back, nothing changed) when an item was
/// stale, gone or another outcome, and the batch must go the exact way.
async fn complete_all(conns: &Conns, ns: &Namespace, items: &[(Lease, Finish)]) -> Result<bool> {
    let mut ids: HashSet<&TaskId> = HashSet::with_capacity(items.len());
    if !items.iter().all(|(lease, f)| matches!(f, Finish::Completed) && ids.insert(&lease.id)) {
        return Ok(false);
    }
    let mut c = conns.get().await.map_err(error::storage)?;
    let mut tx = c.begin_read_committed().await.map_err(error::storage)?;
    // The id list keeps the statement on the primary key; the pairs check
    // each item's fence.
    let mut qb = complete_query(ns, items.iter().map(|(lease, _)| lease.id.as_str()));
    qb.push(" AND (id, fence) IN (");
    let mut pairs = qb.separated(", ");
    for (lease, _) in items {
        pairs.push("(").push_bind_unseparated(lease.id.as_str().to_owned());
        pairs.push_unseparated(", ").push_bind_unseparated(lease.fence).push_unseparated(")");
    }
    qb.push(") AND state = 'RUNNING'");
    let changed = qb.build().execute(&mut *tx).await.map_err(error::storage)?.rows_affected();
    if changed == items.len() as u64 {
        tx.commit().await.map_err(error::storage)?;
        c.done();
        Ok(true)
    } else {
        tx.rollback().await.map_err(error::storage)?;
        c.done();
        Ok(false)
    }
}

async fn finish_batch(
    conns: &Conns,
    ns: &Namespace,
    items: &[(Lease, Finish)],
) -> Result<Vec<Result<TaskState>>> {
    let mut c = conns.get().await.map_err(error::storage)?;
    let mut tx = c.begin_read_committed().await.map_err(error::storage)?;
    let mut qb: QueryBuilder<MySql> =
        QueryBuilder::new(concat!("SELECT id, fence, state FROM ", tasks!(), " WHERE ns = "));
    qb.push_bind(ns.as_str().to_owned()).push(" AND id IN ");
    push_in_list(&mut qb, items.iter().map(|(lease, _)| lease.id.as_str()));
    qb.push(" FOR UPDATE");
    let rows = qb.build().fetch_all(&mut *tx).await.map_err(error::storage)?;
    let mut current: HashMap<String, (u64, String)> = HashMap::with_capacity(rows.len());
    for r in rows {
        let id: String = r.try_get("id").map_err(error::storage)?;
        current.insert(
            id,
            (r.try_get("fence").map_err(error::storage)?, r.try_get("state").map_err(error::storage)?),
        );
    }

    let mut out: Vec<Result<TaskState>> = Vec::with_capacity(items.len());
    let mut used: HashSet<&TaskId> = HashSet::new();
    let mut completed: Vec<&TaskId> = Vec::new();
    for (lease, f) in items {
        let answer = match current.get(lease.id.as_str()) {
            None => Err(Error::NotFound(lease.id.clone())),
            Some((fence, state))
                if *fence == lease.fence
                    && state == TaskState::Running.as_str()
                    && used.insert(&lease.id) =>
            {
                if matches!(f, Finish::Completed) {
                    completed.push(&lease.id);
                } else {
                    finish_query(ns, lease, f).execute(&mut *tx).await.map_err(error::storage)?;
                }
                Ok(f.target())
            }
            Some(_) => Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence }),
        };
        out.push(answer);
    }
    if !completed.is_empty() {
        let mut qb = complete_query(ns, completed.iter().map(|id| id.as_str()));
        qb.build().execute(&mut *tx).await.map_err(error::storage)?;
    }
    tx.commit().await.map_err(error::storage)?;
    c.done();
    Ok(out)
}
