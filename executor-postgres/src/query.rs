//! Reads for operators and producers: get, list, counts.

use std::collections::BTreeMap;

use executor_core::{Error, ListQuery, Namespace, Page, Result, StateCounts, TaskId, TaskRecord, Unreadable};
use sqlx::Row;

use crate::{
    PostgresStorage,
    conn::RunOn,
    error, row,
    sql::{self, sql},
};

impl PostgresStorage {
    /// Reads one task with its attempt log; a row that does not parse is
    /// [`Error::Corrupt`] (an attempt log that does not parse reads as empty).
    pub(crate) async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
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
    /// reported in [`Page::unreadable`] (invariant 7): the rest of the page
    /// still reads, and the cursor moves past it.
    pub(crate) async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
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

    /// Tasks per state, from the `ix_finished` index alone. Rows with a state
    /// no one knows are left out (and logged).
    pub(crate) async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        let rows = sqlx::query(sql!("query/counts"))
            .bind(ns.as_str())
            .fetch_all_on(&self.conns)
            .await
            .map_err(error::storage)?;
        let mut out = BTreeMap::new();
        for r in rows {
            let state: String = r.try_get("state").map_err(error::storage)?;
            let n: i64 = r.try_get("n").map_err(error::storage)?;
            match row::exact_state(&state) {
                Ok(st) => {
                    out.insert(st, u64::try_from(n).unwrap_or(0));
                }
                Err(_) => tracing::warn!(%state, n, "tasks with an unknown state left out of the counts"),
            }
        }
        Ok(out.into_iter().collect())
    }
}

/// What every cursor of this store starts with.
const CURSOR_PREFIX: &str = "pg1.";

/// `pg1.<finished_at or ->.<id in hex>`: hex, so any stored id (even one
/// that is not a valid `TaskId` any more) round-trips, and a cursor from
/// another store or another version is refused rather than misread.
fn make_cursor(finished: Option<i64>, id: &str) -> String {
    let f = finished.map_or_else(|| "-".to_owned(), |f| f.to_string());
    let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{CURSOR_PREFIX}{f}.{hex}")
}

fn parse_cursor(c: &str) -> Result<(Option<i64>, String)> {
    let bad = || Error::invalid("cursor", format!("`{c}` was not made by this store's list"));
    let (f, hex) = c.strip_prefix(CURSOR_PREFIX).and_then(|rest| rest.split_once('.')).ok_or_else(bad)?;
    let f = match f {
        "-" => None,
        f => Some(f.parse::<u64>().ok().and_then(|f| i64::try_from(f).ok()).ok_or_else(bad)?),
    };
    if hex.is_empty() || hex.len() % 2 != 0 || hex.len() > 2 * 4 * executor_core::MAX_ID_LEN {
        return Err(bad());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)?;
    Ok((f, String::from_utf8(bytes).map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        for (f, id) in [(None, "a:b"), (Some(17), "x"), (Some(0), "pad "), (None, "é.\u{1d11e}")] {
            assert_eq!(parse_cursor(&make_cursor(f, id)).ok(), Some((f, id.to_owned())), "{f:?} {id:?}");
        }
        for foreign in [
            "garbage",
            "x:y",
            "0:x:y",
            "-:a",
            "pg1.",
            "pg1.-.",
            "pg1.x.61",
            "pg1.-1.61",
            "pg1.1.6",
            "pg1.1.zz",
            "pg1.1.ff",
            "my1.1.61",
        ] {
            assert!(parse_cursor(foreign).is_err(), "{foreign} accepted");
        }
    }
}
