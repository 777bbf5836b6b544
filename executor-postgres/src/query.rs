//! Reads for operators and producers: get and list (the counts are the
//! SQL core's).

use executor_core::{Error, ListQuery, Namespace, Page, Result, TaskId, TaskRecord, query::Unreadable};
use executor_sql::dialect::Query;
use sqlx::Row;

use crate::{
    PostgresDialect,
    conn::RunOn,
    error, row,
    sql::{self, sql},
};

/// What every cursor of this store starts with (`executor_sql::cursor`).
const CURSOR_PREFIX: &str = "pg1.";

fn make_cursor(finished: Option<i64>, id: &str) -> String {
    executor_sql::cursor::make(CURSOR_PREFIX, finished, id)
}

fn parse_cursor(c: &str) -> Result<(Option<i64>, String)> {
    executor_sql::cursor::parse(CURSOR_PREFIX, executor_core::id::MAX_ID_LEN, c)
}

impl Query for PostgresDialect {
    /// Reads one task with its attempt log; a row that does not parse is
    /// [`Error::Corrupt`] (an attempt log that does not parse reads as empty).
    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        let r = sqlx::query(sql!("query/get"))
            .bind(ns.as_str())
            .bind(id.as_str())
            .fetch_optional_on(&self.conns)
            .await
            .map_err(error::storage)?;
        r.map(|r| row::task_with_log(&r).map_err(|reason| Error::Corrupt { id: id.clone(), reason }))
            .transpose()
    }

    /// One page of a state, in `(finished_at, id)` order: the order of the
    /// `ix_finished` index (`ix_name` with a name), so a page is one index
    /// range scan. `finished_at`
    /// does not change while a task stays in a state, so following `next`
    /// visits each such task once. A row that does not parse is skipped and
    /// reported in [`Page::unreadable`] (no neighbour harm): the rest of the page
    /// still reads, and the cursor moves past it.
    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        query.validate()?;
        let cursor = query.cursor.as_deref().map(parse_cursor).transpose()?;
        // The lines of the file this list sends (see the file).
        let mut on = Vec::new();
        if query.name.is_some() {
            on.push("name");
        }
        match cursor {
            None => {}
            Some((None, _)) => on.push("after_unfinished"),
            Some((Some(_), _)) => on.push("after_finished"),
        }
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql::only(sql!("query/list"), &on)))
            .bind(ns.as_str().to_owned())
            .bind(query.state.as_str());
        if let Some(name) = &query.name {
            q = q.bind(name.clone());
        }
        match cursor {
            None => {}
            Some((None, id)) => q = q.bind(id),
            Some((Some(f), id)) => q = q.bind(f).bind(f).bind(id),
        }
        let q = q.bind(i64::try_from(query.limit + 1).unwrap_or(i64::MAX));
        let rows = q.fetch_all_on(&self.conns).await.map_err(error::storage)?;
        let more = rows.len() > query.limit;
        let mut page = Page::default();
        for r in rows.iter().take(query.limit) {
            match row::task_from_row(r) {
                Ok(task) => page.tasks.push(task),
                Err(reason) => {
                    tracing::warn!(task = %row::raw_id(r), %reason, "unreadable task row skipped by list");
                    page.unreadable.push(Unreadable::new(row::raw_id(r), reason));
                }
            }
        }
        if more && let Some(last) = rows.get(query.limit - 1) {
            // From the raw row, so an unreadable last row still moves it on.
            let finished: Option<i64> = last.try_get("finished_at").unwrap_or(None);
            page.next = Some(make_cursor(finished, &row::raw_id(last)));
        }
        Ok(page)
    }
}
