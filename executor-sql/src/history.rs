//! Throughput history reads and the leader's trim, on every dialect: one
//! row per (namespace, minute, task name). The add is the dialect's (one
//! upsert over a list of rows, written the dialect's way).

use std::collections::BTreeMap;

use executor_core::{Namespace, Result, Timestamp, history::HistoryBucket};

use crate::{
    Dialect,
    error::retry_lock_conflicts,
    stmt::{Cols, Value, execute, fetch_all, ts},
};

/// Every bucket from `since` on, by minute then name (its bytes, whatever
/// order the server sorted by). A row that does not read back (a negative
/// count, a name that is not UTF-8, edited by hand) is left out with a
/// warning.
pub(crate) async fn read<D: Dialect>(d: &D, ns: &Namespace, since: Timestamp) -> Result<Vec<HistoryBucket>> {
    let args = [("ns", Value::Text(ns.as_str())), ("since_ms", Value::Int(ts(since)))];
    let rows = fetch_all(d, &D::SQL.history_read, &args).await?;
    let mut out = BTreeMap::new();
    for r in &rows {
        let bucket = D::history_name(r).and_then(|name| {
            HistoryBucket::from_columns(r.int("minute")?, name, r.int("succeeded")?, r.int("failed")?)
        });
        match bucket {
            Ok(b) => {
                out.insert((b.minute, b.name.clone()), b);
            }
            Err(reason) => tracing::warn!(namespace = %ns, %reason, "left out an unreadable history row"),
        }
    }
    Ok(out.into_values().collect())
}

/// Deletes the minutes before `before`; how many rows went.
pub(crate) async fn trim<D: Dialect>(d: &D, ns: &Namespace, before: Timestamp) -> Result<u64> {
    let args = [("ns", Value::Text(ns.as_str())), ("before_ms", Value::Int(ts(before)))];
    retry_lock_conflicts::<D, _, _, _>(D::LOCK_RETRIES, || execute(d, &D::SQL.history_trim, &args)).await
}
