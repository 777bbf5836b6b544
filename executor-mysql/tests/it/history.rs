//! Throughput history as the table keeps it: a row edited by hand (a
//! negative count, a minute that is not one) is left out with a warning
//! while the others answer; `purge` deletes the namespace's rows.

use executor_core::storage::HistoryStore;
use executor_core::{Timestamp, storage::HistoryCount};

use crate::support::{cleanup, fresh};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn a_corrupt_row_is_left_out_and_purge_deletes_the_rest() -> TestResult {
    let (s, ns) = fresh().await;
    let run = async {
        let counts = [HistoryCount::new("a", 1, 2), HistoryCount::new("b", 3, 4)];
        s.add_history(&ns, &counts).await?;
        sqlx::query("UPDATE reliable_executor_history SET succeeded = -5 WHERE ns = ? AND name = 'a'")
            .bind(ns.as_str())
            .execute(s.pool())
            .await?;
        sqlx::query(
            "INSERT INTO reliable_executor_history (ns, minute, name, succeeded, failed) VALUES (?, 12345, CAST('ghost' AS BINARY), 1, 1)",
        )
        .bind(ns.as_str())
        .execute(s.pool())
        .await?;
        let read: Vec<(String, u64, u64)> = s
            .history(&ns, Timestamp::default())
            .await?
            .into_iter()
            .map(|b| (b.name, b.succeeded, b.failed))
            .collect();
        assert_eq!(read, [("b".to_owned(), 3, 4)], "the negative count and the odd minute are left out");
        s.purge(&ns).await?;
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM reliable_executor_history WHERE ns = ?")
            .bind(ns.as_str())
            .fetch_one(s.pool())
            .await?;
        assert_eq!(left, 0, "purge deletes the history rows");
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let outcome = run.await;
    cleanup(&s, &ns).await;
    outcome
}
