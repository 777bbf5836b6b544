//! Rows edited by hand and values the columns cannot hold: a clear error or
//! an `ERROR` state with the reason, never a panic, a stuck claim or a
//! neighbour harmed (bad input neither panics nor loses tasks, and harms no neighbour).

use std::time::Duration;

use executor_core::{
    Error, ListQuery, TaskId, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Debounce, Storage, SubmitMode},
    testing,
};
use sqlx::Row;

use crate::support::{cleanup, fresh};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn edit(s: &reliable_executor_postgres::PostgresStorage, sql: &str, ns: &str, id: &str) -> TestResult {
    let done = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).bind(ns).bind(id).execute(s.pool()).await?;
    assert_eq!(done.rows_affected(), 1, "{sql}");
    Ok(())
}

#[tokio::test]
async fn corrupt_waiting_rows_go_to_error_and_their_neighbours_run() -> TestResult {
    let (s, ns) = fresh().await;
    for id in ["good-1", "bad-retry", "bad-queue", "at-max", "good-2"] {
        s.submit(&ns, testing::new_task(id)).await?;
    }
    let table = "reliable_executor_tasks";
    edit(
        &s,
        &format!("UPDATE {table} SET retry = 'not json' WHERE ns = $1 AND id = $2"),
        ns.as_str(),
        "bad-retry",
    )
    .await?;
    // An id with whitespace (no TaskId can hold it) in the claim's range.
    edit(
        &s,
        &format!("UPDATE {table} SET id = 'bad id' WHERE ns = $1 AND id = $2"),
        ns.as_str(),
        "bad-queue",
    )
    .await?;
    edit(
        &s,
        &format!(
            "UPDATE {table} SET attempts = 2147483647, max_attempts = 2147483647 WHERE ns = $1 AND id = $2"
        ),
        ns.as_str(),
        "at-max",
    )
    .await?;

    let claimed =
        s.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), Duration::from_secs(30)).await?;
    let mut ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["good-1", "good-2"]);
    for (id, why) in [("bad-retry", "retry policy"), ("bad id", "corrupt record"), ("at-max", "maximum")] {
        let row =
            sqlx::query("SELECT state, last_error FROM reliable_executor_tasks WHERE ns = $1 AND id = $2")
                .bind(ns.as_str())
                .bind(id)
                .fetch_one(s.pool())
                .await?;
        let state: String = row.try_get("state")?;
        let error: Option<String> = row.try_get("last_error")?;
        assert_eq!(state, "ERROR", "{id}");
        let error = error.unwrap_or_default();
        assert!(error.starts_with("corrupt record") && error.contains(why), "{id}: {error}");
    }
    // Nothing is left waiting to block the queue.
    assert!(
        s.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), Duration::from_secs(30))
            .await?
            .is_empty()
    );
    cleanup(&s, &ns).await;
    Ok(())
}

#[tokio::test]
async fn list_reports_an_unreadable_row_and_reads_the_rest() -> TestResult {
    let (s, ns) = fresh().await;
    for id in ["a", "b", "c"] {
        s.submit(&ns, testing::new_task(id)).await?;
    }
    edit(&s, "UPDATE reliable_executor_tasks SET retry = '{' WHERE ns = $1 AND id = $2", ns.as_str(), "b")
        .await?;
    let page = s.list(&ns, ListQuery::new(TaskState::Created, 10)).await?;
    let read: Vec<&str> = page.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(read, ["a", "c"]);
    assert_eq!(page.unreadable.len(), 1);
    assert_eq!(page.unreadable[0].id, "b");
    assert!(matches!(s.get(&ns, &TaskId::new("b")?).await, Err(Error::Corrupt { .. })));
    cleanup(&s, &ns).await;
    Ok(())
}

#[tokio::test]
async fn values_the_columns_cannot_hold_are_refused_clearly() -> TestResult {
    let (s, ns) = fresh().await;
    let mut big = testing::new_task("big");
    big.payload = vec![b'x'; 16 * 1024 * 1024 + 1];
    assert!(matches!(s.submit(&ns, big).await, Err(Error::PayloadTooLarge { .. })));
    let mut nul = testing::new_task("nul-key");
    nul.mode = SubmitMode::Debounce(Debounce::new("a\0b", Duration::from_secs(1)));
    match s.submit(&ns, nul).await {
        Err(e @ Error::Invalid { .. }) => assert!(!e.is_retryable()),
        other => panic!("expected Invalid, got {other:?}"),
    }
    // A NUL in an error text is kept, escaped, instead of failing the finish.
    s.submit(&ns, testing::new_task("ok")).await?;
    let claimed =
        s.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::from_secs(30)).await?;
    let lease = claimed.first().and_then(|t| t.lease()).ok_or("nothing claimed")?;
    let failed = executor_core::storage::Finish::Failed { error: "bad \0 byte".to_owned() };
    assert_eq!(s.finish(&ns, &lease, failed).await?, TaskState::Failed);
    let task = s.get(&ns, &lease.id).await?.ok_or("gone")?;
    assert_eq!(task.last_error.as_deref(), Some("bad \\0 byte"));
    assert_eq!(s.counts(&ns).await?.total(), 1, "nothing else was stored");
    cleanup(&s, &ns).await;
    Ok(())
}
