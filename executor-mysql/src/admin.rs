//! What operators and producers call: get, list, counts, cancel, requeue.

use std::collections::BTreeMap;

use executor_core::{
    CancelOutcome, Error, ListQuery, Namespace, Page, Result, StateCounts, TaskId, TaskRecord, TaskState,
};
use sqlx::{MySql, QueryBuilder, Row};

use crate::{
    MySqlStorage,
    conn::RunOn,
    error, row,
    sql::{now_ms, task_columns, tasks},
};

/// Reads one task; a row that does not parse is [`Error::Corrupt`].
pub(crate) async fn get(s: &MySqlStorage, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
    let r = sqlx::query(concat!("SELECT ", task_columns!(), " FROM ", tasks!(), " WHERE ns = ? AND id = ?"))
        .bind(ns.as_str())
        .bind(id.as_str())
        .fetch_optional_on(&s.conns)
        .await
        .map_err(error::storage)?;
    r.map(|r| row::task_from_row(&r).map_err(|reason| Error::Corrupt { id: id.clone(), reason })).transpose()
}

/// One page of a state, in `(finished_at, id)` order: the order of the
/// `ix_finished` index, so a page is one index range scan. `finished_at`
/// does not change while a task stays in a state, so following `next`
/// visits each such task once.
pub(crate) async fn list(s: &MySqlStorage, ns: &Namespace, query: ListQuery) -> Result<Page> {
    if query.limit == 0 || query.limit > 1000 {
        return Err(Error::invalid("page size", format!("{} is not between 1 and 1000", query.limit)));
    }
    let cursor = query.cursor.as_deref().map(parse_cursor).transpose()?;
    let mut qb: QueryBuilder<MySql> =
        QueryBuilder::new(concat!("SELECT ", task_columns!(), " FROM ", tasks!(), " WHERE ns = "));
    qb.push_bind(ns.as_str().to_owned()).push(" AND state = ").push_bind(query.state.as_str());
    match cursor {
        None => {}
        // NULLs sort first: after a NULL come the larger ids among NULLs,
        // then every non-NULL.
        Some((None, id)) => {
            qb.push(" AND ((finished_at IS NULL AND id > ")
                .push_bind(id)
                .push(") OR finished_at IS NOT NULL)");
        }
        Some((Some(f), id)) => {
            qb.push(" AND (finished_at > ")
                .push_bind(f)
                .push(" OR (finished_at = ")
                .push_bind(f)
                .push(" AND id > ")
                .push_bind(id)
                .push("))");
        }
    }
    qb.push(" ORDER BY finished_at, id LIMIT ").push_bind(u32::try_from(query.limit + 1).unwrap_or(u32::MAX));
    let rows = qb.build().fetch_all_on(&s.conns).await.map_err(error::storage)?;
    let more = rows.len() > query.limit;
    let mut tasks = Vec::with_capacity(query.limit);
    for r in rows.iter().take(query.limit) {
        tasks.push(row::task_from_row(r).map_err(|reason| row::corrupt(&row::raw_id(r), reason))?);
    }
    let next = match tasks.last() {
        Some(last) if more => Some(make_cursor(last)),
        _ => None,
    };
    Ok(Page { tasks, next })
}

fn make_cursor(t: &TaskRecord) -> String {
    match t.finished_at {
        Some(f) => format!("{}:{}", f.as_millis(), t.id),
        None => format!("-:{}", t.id),
    }
}

fn parse_cursor(c: &str) -> Result<(Option<i64>, String)> {
    let bad = || Error::invalid("cursor", format!("`{c}` was not made by this store"));
    let (f, id) = c.split_once(':').ok_or_else(bad)?;
    let f = match f {
        "-" => None,
        f => Some(f.parse::<i64>().map_err(|_| bad())?),
    };
    Ok((f, id.to_owned()))
}

/// Tasks per state, from the `ix_finished` index alone. Rows with a state
/// no one knows are left out (and logged).
pub(crate) async fn counts(s: &MySqlStorage, ns: &Namespace) -> Result<StateCounts> {
    let rows =
        sqlx::query(concat!("SELECT state, COUNT(*) AS n FROM ", tasks!(), " WHERE ns = ? GROUP BY state"))
            .bind(ns.as_str())
            .fetch_all_on(&s.conns)
            .await
            .map_err(error::storage)?;
    let mut out = BTreeMap::new();
    for r in rows {
        let state: String = r.try_get("state").map_err(error::storage)?;
        let n: i64 = r.try_get("n").map_err(error::storage)?;
        match state.parse::<TaskState>() {
            Ok(st) => {
                out.insert(st, u64::try_from(n).unwrap_or(0));
            }
            Err(_) => tracing::warn!(%state, n, "tasks with an unknown state left out of the counts"),
        }
    }
    Ok(StateCounts(out))
}

/// Cancels a waiting task, or flags a running one for its worker's next
/// heartbeat. Each branch is one statement conditional on the state, so a
/// task claimed in between is flagged instead of cancelled under its worker.
pub(crate) async fn cancel(s: &MySqlStorage, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
    // A task can move between waiting and running while we look (a release,
    // a claim): a few rounds settle it.
    for _ in 0..5 {
        let done = sqlx::query(concat!(
            "UPDATE ",
            tasks!(),
            " SET finished_at = ",
            now_ms!(),
            ", state = 'CANCELLED' WHERE ns = ? AND id = ? AND state IN ('CREATED', 'PENDING')"
        ))
        .bind(ns.as_str())
        .bind(id.as_str())
        .execute_on(&s.conns)
        .await
        .map_err(error::storage)?;
        if done.rows_affected() > 0 {
            return Ok(CancelOutcome::Cancelled);
        }
        let done = sqlx::query(concat!(
            "UPDATE ",
            tasks!(),
            " SET cancel_requested = 1 WHERE ns = ? AND id = ? AND state = 'RUNNING'"
        ))
        .bind(ns.as_str())
        .bind(id.as_str())
        .execute_on(&s.conns)
        .await
        .map_err(error::storage)?;
        if done.rows_affected() > 0 {
            return Ok(CancelOutcome::Requested);
        }
        match state_of(s, ns, id).await? {
            None => return Err(Error::NotFound(id.clone())),
            Some(st) if st.is_terminal() => {
                return Err(Error::IllegalTransition { id: id.clone(), state: st, action: "cancel" });
            }
            Some(_) => continue,
        }
    }
    Err(Error::storage(std::io::Error::other("task kept changing state during cancel"), true))
}

/// Moves a dead-lettered task back to `PENDING`, due now, attempts reset.
pub(crate) async fn requeue(s: &MySqlStorage, ns: &Namespace, id: &TaskId) -> Result<()> {
    let done = sqlx::query(concat!(
        "UPDATE ",
        tasks!(),
        " SET due_at = ",
        now_ms!(),
        ", attempts = 0, finished_at = NULL, worker = NULL, lease_until = NULL, cancel_requested = 0, \
         state = 'PENDING' WHERE ns = ? AND id = ? AND state IN ('FAILED', 'TIMEOUT', 'ERROR')"
    ))
    .bind(ns.as_str())
    .bind(id.as_str())
    .execute_on(&s.conns)
    .await
    .map_err(error::storage)?;
    if done.rows_affected() > 0 {
        s.notify_work();
        return Ok(());
    }
    match state_of(s, ns, id).await? {
        None => Err(Error::NotFound(id.clone())),
        Some(st) => Err(Error::IllegalTransition { id: id.clone(), state: st, action: "requeue" }),
    }
}

async fn state_of(s: &MySqlStorage, ns: &Namespace, id: &TaskId) -> Result<Option<TaskState>> {
    let r = sqlx::query(concat!("SELECT state FROM ", tasks!(), " WHERE ns = ? AND id = ?"))
        .bind(ns.as_str())
        .bind(id.as_str())
        .fetch_optional_on(&s.conns)
        .await
        .map_err(error::storage)?;
    match r {
        None => Ok(None),
        Some(r) => {
            let st: String = r.try_get("state").map_err(error::storage)?;
            st.parse::<TaskState>()
                .map(Some)
                .map_err(|e| Error::Corrupt { id: id.clone(), reason: e.to_string() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        assert_eq!(parse_cursor("-:a:b").ok(), Some((None, "a:b".to_owned())));
        assert_eq!(parse_cursor("17:x").ok(), Some((Some(17), "x".to_owned())));
        assert!(parse_cursor("garbage").is_err());
        assert!(parse_cursor("x:y").is_err());
    }
}
