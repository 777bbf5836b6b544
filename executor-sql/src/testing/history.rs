//! Throughput history as the table keeps it: a row edited by hand (a
//! negative count, a minute that is not one) is left out with a warning
//! while the others answer; `purge` deletes the namespace's rows.

use executor_core::{
    Timestamp,
    storage::{HistoryCount, HistoryStore},
};

use super::{TestDb, TestResult, cleanup, fresh, placeholders, run};
use crate::{
    Dialect,
    stmt::{Cols, SqlDb, Value},
};

/// A negative count and an odd minute are left out of a read; `purge`
/// deletes every history row of the namespace.
pub async fn a_corrupt_history_row_is_left_out_and_purge_deletes_the_rest<D: TestDb>() -> TestResult {
    let (s, ns) = fresh::<D>().await;
    let run = async {
        let counts = [HistoryCount::new("a", 1, 2), HistoryCount::new("b", 3, 4)];
        s.add_history(&ns, &counts).await?;
        run(
            &s,
            "UPDATE reliable_executor_history SET succeeded = -5 WHERE ns = $1 AND name = 'a'",
            &[ns.as_str()],
        )
        .await?;
        run(
            &s,
            "INSERT INTO reliable_executor_history (ns, minute, name, succeeded, failed) VALUES ($1, 12345, 'ghost', 1, 1)",
            &[ns.as_str()],
        )
        .await?;
        let read: Vec<(String, u64, u64)> = s
            .history(&ns, Timestamp::default())
            .await?
            .into_iter()
            .map(|b| (b.name, b.succeeded, b.failed))
            .collect();
        assert_eq!(read, [("b".to_owned(), 3, 4)], "the negative count and the odd minute are left out");
        s.purge(&ns).await?;
        let rows = <D::Dialect as Dialect>::Db::fetch_all(
            SqlDb::bind(
                sqlx::query::<<D::Dialect as Dialect>::Db>(sqlx::AssertSqlSafe(placeholders::<D::Dialect>(
                    "SELECT COUNT(*) AS n FROM reliable_executor_history WHERE ns = $1",
                ))),
                Value::Text(ns.as_str()),
            ),
            s.dialect().conns(),
        )
        .await?;
        let left = rows.first().map(|r| r.int("n")).transpose()?;
        assert_eq!(left, Some(0), "purge deletes the history rows");
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let outcome = run.await;
    cleanup(&s, &ns).await;
    outcome
}
