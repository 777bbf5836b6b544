//! What operators and producers call to change a task: cancel, requeue,
//! delete.

use executor_core::{Error, Namespace, Result, TaskId, TaskState, query::CancelOutcome};
use executor_sql::dialect::Admin;
use sqlx::Row;

use crate::{PostgresDialect, conn::RunOn, error, row, sql::sql};

async fn state_of(s: &PostgresDialect, ns: &Namespace, id: &TaskId) -> Result<Option<TaskState>> {
    let q = sqlx::query(sql!("admin/state"));
    let r =
        q.bind(ns.as_str()).bind(id.as_str()).fetch_optional_on(&s.conns).await.map_err(error::storage)?;
    match r {
        None => Ok(None),
        Some(r) => {
            let st: String = r.try_get("state").map_err(error::storage)?;
            row::exact_state(&st).map(Some).map_err(|reason| Error::Corrupt { id: id.clone(), reason })
        }
    }
}

impl Admin for PostgresDialect {
    /// Cancels a waiting task, or flags a running one for its worker's next
    /// heartbeat. Each branch is one statement conditional on the state, so a
    /// task claimed in between is flagged instead of cancelled under its worker.
    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        // A task can move between waiting and running while we look (a release,
        // a claim): a few rounds settle it.
        for _ in 0..5 {
            let done = sqlx::query(sql!("admin/cancel_waiting"));
            let done = done
                .bind(ns.as_str())
                .bind(id.as_str())
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)?;
            if done.rows_affected() > 0 {
                return Ok(CancelOutcome::Cancelled);
            }
            let done = sqlx::query(sql!("admin/request_cancel"));
            let done = done
                .bind(ns.as_str())
                .bind(id.as_str())
                .execute_on(&self.conns)
                .await
                .map_err(error::storage)?;
            if done.rows_affected() > 0 {
                return Ok(CancelOutcome::Requested);
            }
            match state_of(self, ns, id).await? {
                None => return Err(Error::NotFound(id.clone())),
                Some(st) if st.is_terminal() => {
                    return Err(Error::IllegalTransition { id: id.clone(), state: st, action: "cancel" });
                }
                Some(_) => continue,
            }
        }
        Err(Error::storage(std::io::Error::other("task kept changing state during cancel"), true))
    }

    /// Moves a dead-lettered task back to `PENDING`, due now, attempts reset,
    /// with the attempt that dead-lettered it appended to its attempt log
    /// (`dead`) in the same statement.
    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        let done = sqlx::query(sql!("admin/requeue"));
        let done =
            done.bind(ns.as_str()).bind(id.as_str()).execute_on(&self.conns).await.map_err(error::storage)?;
        if done.rows_affected() > 0 {
            self.notify_work(ns);
            return Ok(());
        }
        match state_of(self, ns, id).await? {
            None => Err(Error::NotFound(id.clone())),
            Some(st) => Err(Error::IllegalTransition { id: id.clone(), state: st, action: "requeue" }),
        }
    }

    /// Deletes one task in any state, readable or not, by primary key: one
    /// statement. Its debounce key goes with the row (the `uk_waiting_key`
    /// index entry); a worker still running it has its finish refused as stale (no
    /// row matches the fence).
    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        let done = error::retry_lock_conflicts(|| async move {
            let q = sqlx::query(sql!("admin/delete"));
            q.bind(ns.as_str()).bind(id.as_str()).execute_on(&self.conns).await.map_err(error::storage)
        })
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// A waiting task due later becomes due now (the server's clock): one
    /// UPDATE by primary key. A task already due keeps its due time, so its
    /// place; anything but `CREATED`/`PENDING` is refused with its state.
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        let q = sqlx::query(sql!("admin/run_now"));
        let done =
            q.bind(ns.as_str()).bind(id.as_str()).execute_on(&self.conns).await.map_err(error::storage)?;
        if done.rows_affected() > 0 {
            self.notify_work(ns);
            return Ok(());
        }
        match state_of(self, ns, id).await? {
            None => Err(Error::NotFound(id.clone())),
            Some(st) if st.is_waiting() => Ok(()),
            Some(st) => Err(Error::IllegalTransition { id: id.clone(), state: st, action: "run now" }),
        }
    }
}
