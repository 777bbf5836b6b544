//! An operator's changes to one task, on every dialect: cancel, requeue,
//! delete, run now; and the tier move's removal of a waiting task. Each is one statement by primary key conditional on
//! the task's state; when it changes nothing, one read tells the caller
//! why (no such task, or a state the change does not apply to).

use executor_core::{Error, Namespace, Result, TaskId, TaskState, query::CancelOutcome};

use crate::{
    Dialect,
    error::retry_lock_conflicts,
    row::exact_state,
    stmt::{Arg, Cols, Statement, Value, execute, fetch_optional},
};

/// The arguments every statement here binds: the namespace, the id and its
/// byte length (MySQL's `_bin` collations pad with spaces, so its
/// statements also compare the length).
fn task<'a>(ns: &'a Namespace, id: &'a TaskId) -> [Arg<'a>; 3] {
    [
        ("ns", Value::Text(ns.as_str())),
        ("id", Value::Text(id.as_str())),
        ("id_len", Value::Int(i64::try_from(id.as_str().len()).unwrap_or(i64::MAX))),
    ]
}

async fn run<D: Dialect>(d: &D, statement: &Statement, ns: &Namespace, id: &TaskId) -> Result<u64> {
    execute(d, statement, &task(ns, id)).await
}

/// The task's state, `None` when there is no such task.
async fn state_of<D: Dialect>(d: &D, ns: &Namespace, id: &TaskId) -> Result<Option<TaskState>> {
    let Some(r) = fetch_optional(d, &D::SQL.admin_state, &task(ns, id)).await? else {
        return Ok(None);
    };
    let corrupt = |reason: String| Error::Corrupt { id: id.clone(), reason };
    let state = r.text("state").map_err(corrupt)?;
    exact_state(&state).map(Some).map_err(corrupt)
}

/// Cancels a waiting task, or flags a running one for its worker's next
/// heartbeat. Each branch is one statement conditional on the state, so a
/// task claimed in between is flagged instead of cancelled under its
/// worker.
pub(crate) async fn cancel<D: Dialect>(d: &D, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
    // A task can move between waiting and running while we look (a
    // release, a claim): a few rounds settle it.
    for _ in 0..5 {
        if run(d, &D::SQL.admin_cancel_waiting, ns, id).await? > 0 {
            return Ok(CancelOutcome::Cancelled);
        }
        if run(d, &D::SQL.admin_request_cancel, ns, id).await? > 0 {
            return Ok(CancelOutcome::Requested);
        }
        match state_of(d, ns, id).await? {
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
/// (`dead`) in the same statement, before the columns it reads change.
pub(crate) async fn requeue<D: Dialect>(d: &D, ns: &Namespace, id: &TaskId) -> Result<()> {
    if run(d, &D::SQL.admin_requeue, ns, id).await? > 0 {
        d.work_may_be_due(ns);
        return Ok(());
    }
    match state_of(d, ns, id).await? {
        None => Err(Error::NotFound(id.clone())),
        Some(st) => Err(Error::IllegalTransition { id: id.clone(), state: st, action: "requeue" }),
    }
}

/// Deletes one task in any state, readable or not, by primary key: one
/// statement. Its debounce key goes with the row; a worker still running it
/// has its finish refused as stale (no row matches the fence).
pub(crate) async fn delete<D: Dialect>(d: &D, ns: &Namespace, id: &TaskId) -> Result<bool> {
    let deleted =
        retry_lock_conflicts::<D, _, _, _>(D::LOCK_RETRIES, || run(d, &D::SQL.admin_delete, ns, id)).await?
            > 0;
    if deleted {
        // A running task's slot of a limited queue may be free now.
        d.work_may_be_due(ns);
    }
    Ok(deleted)
}

/// A waiting task due later becomes due now (the server's clock): one
/// UPDATE by primary key. A task already due keeps its due time, so its
/// place; anything but `CREATED`/`PENDING` is refused with its state.
pub(crate) async fn run_now<D: Dialect>(d: &D, ns: &Namespace, id: &TaskId) -> Result<()> {
    if run(d, &D::SQL.admin_run_now, ns, id).await? > 0 {
        d.work_may_be_due(ns);
        return Ok(());
    }
    match state_of(d, ns, id).await? {
        None => Err(Error::NotFound(id.clone())),
        Some(st) if st.is_waiting() => Ok(()),
        Some(st) => Err(Error::IllegalTransition { id: id.clone(), state: st, action: "run now" }),
    }
}

/// Deletes the task if it still waits with this fence (a tier move): one
/// conditional DELETE, so a task claimed meanwhile is never removed under
/// its worker.
pub(crate) async fn remove_waiting<D: Dialect>(
    d: &D,
    ns: &Namespace,
    id: &TaskId,
    fence: u64,
) -> Result<bool> {
    let [a, b, c] = task(ns, id);
    Ok(execute(d, &D::SQL.tier_remove, &[a, b, c, ("fence", Value::Uint(fence))]).await? > 0)
}
