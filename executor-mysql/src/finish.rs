//! Ending attempts: one statement conditional on the fence per task, or one
//! short transaction for a batch.

use std::collections::{HashMap, HashSet};

use executor_core::{Error, Finish, Lease, Namespace, Result, TaskId, TaskState};
use sqlx::{MySql, QueryBuilder, Row};

use crate::{
    MySqlStorage,
    conn::RunOn,
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
    s: &MySqlStorage,
    ns: &Namespace,
    lease: &Lease,
    finish: Finish,
) -> Result<TaskState> {
    let done = finish_query(ns, lease, &finish).execute_on(&s.conns).await.map_err(error::storage)?;
    if done.rows_affected() == 0 {
        let exists = sqlx::query(concat!("SELECT 1 FROM ", tasks!(), " WHERE ns = ? AND id = ?"))
            .bind(ns.as_str())
            .bind(lease.id.as_str())
            .fetch_optional_on(&s.conns)
            .await
            .map_err(error::storage)?;
        return Err(match exists {
            Some(_) => Error::StaleFence { id: lease.id.clone(), fence: lease.fence },
            None => Error::NotFound(lease.id.clone()),
        });
    }
    let target = finish.target();
    if target == TaskState::Pending {
        s.notify_work();
    }
    Ok(target)
}

/// Ends many attempts in one READ COMMITTED transaction: one locking SELECT
/// reads every fence, one UPDATE completes all current `Completed` items,
/// the rarer outcomes get one statement each. Each item gets its own answer.
pub(crate) async fn finish_many(
    s: &MySqlStorage,
    ns: &Namespace,
    items: Vec<(Lease, Finish)>,
) -> Result<Vec<Result<TaskState>>> {
    if items.len() < BATCH_MIN {
        let mut out = Vec::with_capacity(items.len());
        for (lease, f) in items {
            out.push(finish(s, ns, &lease, f).await);
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(1000) {
        out.extend(error::retry_lock_conflicts(|| finish_batch(s, ns, chunk)).await?);
    }
    if out.iter().any(|r| matches!(r, Ok(TaskState::Pending))) {
        s.notify_work();
    }
    Ok(out)
}

async fn finish_batch(
    s: &MySqlStorage,
    ns: &Namespace,
    items: &[(Lease, Finish)],
) -> Result<Vec<Result<TaskState>>> {
    let mut c = s.conns.get().await.map_err(error::storage)?;
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
        let mut qb: QueryBuilder<MySql> = QueryBuilder::new(concat!(
            "UPDATE ",
            tasks!(),
            " SET finished_at = ",
            now_ms!(),
            ", worker = NULL, lease_until = NULL, state = 'COMPLETED' WHERE ns = "
        ));
        qb.push_bind(ns.as_str().to_owned()).push(" AND id IN ");
        push_in_list(&mut qb, completed.iter().map(|id| id.as_str()));
        qb.build().execute(&mut *tx).await.map_err(error::storage)?;
    }
    tx.commit().await.map_err(error::storage)?;
    c.done();
    Ok(out)
}
