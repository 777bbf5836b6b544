//! Reads for operators and producers: one task, and a page of a state.

use executor_core::{Error, ListQuery, Namespace, Page, Result, TaskId, TaskRecord, query::Unreadable};

use crate::{
    Dialect, cursor,
    row::{self, raw_id},
    stmt::{Cols, SqlDb, Value, fetch_optional, query_only},
};

/// Reads one task with its attempt log; a row that does not parse is
/// [`Error::Corrupt`] (an attempt log that does not parse reads as empty).
pub(crate) async fn get<D: Dialect>(d: &D, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
    let args = [
        ("ns", Value::Text(ns.as_str())),
        ("id", Value::Text(id.as_str())),
        ("id_len", Value::Int(i64::try_from(id.as_str().len()).unwrap_or(i64::MAX))),
    ];
    let Some(r) = fetch_optional(d, &D::SQL.query_get, &args).await? else {
        return Ok(None);
    };
    row::task_with_log::<D>(&r).map(Some).map_err(|reason| Error::Corrupt { id: id.clone(), reason })
}

/// One page of a state, in `(finished_at, id)` order: the order of the
/// `ix_finished` index (`ix_name` with a name), so a page is one index
/// range scan. `finished_at` does not change while a task stays in a
/// state, so following `next` visits each such task once. A row that does
/// not parse is skipped and reported in [`Page::unreadable`]: the rest of
/// the page still reads, and the cursor moves past it.
pub(crate) async fn list<D: Dialect>(d: &D, ns: &Namespace, query: ListQuery) -> Result<Page> {
    query.validate()?;
    let after =
        query.cursor.as_deref().map(|c| cursor::parse(D::CURSOR_PREFIX, D::MAX_ID_CHARS, c)).transpose()?;
    // The optional lines of the file this list sends (see the file).
    let mut on = Vec::new();
    if query.name.is_some() {
        on.push("name");
    }
    let (finished, after_id) = match &after {
        None => (None, ""),
        Some((None, id)) => {
            on.push("after_unfinished");
            (None, id.as_str())
        }
        Some((Some(f), id)) => {
            on.push("after_finished");
            (Some(*f), id.as_str())
        }
    };
    let args = [
        ("ns", Value::Text(ns.as_str())),
        ("state", Value::Text(query.state.as_str())),
        ("name", Value::OptText(query.name.as_deref())),
        ("cursor_id", Value::Text(after_id)),
        ("cursor_finished", Value::OptInt(finished)),
        ("limit", Value::Int(i64::try_from(query.limit + 1).unwrap_or(i64::MAX))),
    ];
    let q = query_only::<D>(&D::SQL.query_list, &on, &args)?;
    let rows = D::Db::fetch_all(q, d.conns()).await.map_err(crate::error::storage::<D>)?;
    let more = rows.len() > query.limit;
    let mut page = Page::default();
    for r in rows.iter().take(query.limit) {
        match row::task::<D>(r) {
            Ok(task) => page.tasks.push(task),
            Err(reason) => {
                tracing::warn!(task = %raw_id(r), %reason, "unreadable task row skipped by list");
                page.unreadable.push(Unreadable::new(raw_id(r), reason));
            }
        }
    }
    if more && let Some(last) = rows.get(query.limit - 1) {
        // From the raw row, so an unreadable last row still moves it on.
        let finished = last.opt_int("finished_at").unwrap_or(None);
        page.next = Some(cursor::make(D::CURSOR_PREFIX, finished, &raw_id(last)));
    }
    Ok(page)
}
