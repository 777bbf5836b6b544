//! Input the columns cannot hold is refused at submit with a reason, never
//! truncated; hand-edited rows read back as `Corrupt` and never block a claim.

mod support;

use std::time::Duration;

use executor_core::{
    Debounce, Error, ListQuery, RetryPolicy, Storage, SubmitMode, TaskId, TaskState, WorkerId, testing,
};
use executor_mysql::MySqlOptions;
use support::{cleanup, fresh, pool};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test]
async fn oversized_payload_and_overlong_values_are_refused() -> TestResult {
    let storage = MySqlOptions::new().max_payload(1024).open(pool(2).await).await?;
    let ns = testing::unique_namespace("my-bad");

    let mut big = testing::new_task("big");
    big.payload = vec![b'x'; 1025];
    let err = storage.submit(&ns, big.clone()).await.err();
    assert!(matches!(err, Some(Error::PayloadTooLarge { size: 1025, limit: 1024 })), "{err:?}");

    // A batch answers per task: the oversized one fails, the others land.
    let many = vec![testing::new_task("ok-1"), big, testing::new_task("ok-2")];
    let answers = storage.submit_many(&ns, many).await?;
    assert!(answers[0].is_ok() && answers[2].is_ok(), "{answers:?}");
    assert!(matches!(answers[1], Err(Error::PayloadTooLarge { .. })), "{answers:?}");

    // TaskId itself refuses more than 191 bytes; the column holds every id
    // it accepts, multi-byte ones included, byte for byte.
    assert!(TaskId::new("x".repeat(192)).is_err());
    let wide = format!("{}abc", "\u{1d11e}".repeat(47));
    assert_eq!(wide.len(), 191);
    let mut t = testing::new_task("placeholder");
    t.id = TaskId::new(wide.clone())?;
    storage.submit(&ns, t).await?;
    let back = storage.get(&ns, &TaskId::new(wide.clone())?).await?;
    assert_eq!(back.map(|r| r.id.into_string()), Some(wide));

    let mut long_name = testing::new_task("long-name");
    long_name.name = "n".repeat(256);
    let err = storage.submit(&ns, long_name).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("task name") && err.contains("255"), "{err}");

    let mut long_key = testing::new_task("long-key");
    long_key.mode = SubmitMode::Debounce(Debounce {
        key: "k".repeat(192),
        window: Duration::from_secs(1),
        max_wait: None,
    });
    let err = storage.submit(&ns, long_key).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("debounce key") && err.contains("191"), "{err}");

    let mut custom = testing::new_task("custom-retry");
    custom.retry = Some(RetryPolicy::custom("never", |_| Duration::from_secs(1)));
    let err = storage.submit(&ns, custom).await.err();
    assert!(matches!(err, Some(Error::Invalid { what: "retry policy", .. })), "{err:?}");

    // Nothing refused reached the table.
    assert_eq!(storage.counts(&ns).await?.total(), 3);
    cleanup(&storage, &ns).await;
    Ok(())
}

async fn corrupt(
    storage: &executor_mysql::MySqlStorage,
    sql: &'static str,
    ns: &str,
    id: &str,
) -> TestResult {
    sqlx::query(sql).bind(ns).bind(id).execute(storage.pool()).await?;
    Ok(())
}

#[tokio::test]
async fn corrupt_rows_are_reported_and_never_block_a_claim() -> TestResult {
    let (storage, ns) = fresh().await;
    for id in ["bad-state", "bad-retry", "bad-time", "good"] {
        storage.submit(&ns, testing::new_task(id)).await?;
    }
    corrupt(
        &storage,
        "UPDATE reliable_executor_tasks SET state = 'BOGUS' WHERE ns = ? AND id = ?",
        ns.as_str(),
        "bad-state",
    )
    .await?;
    corrupt(
        &storage,
        "UPDATE reliable_executor_tasks SET retry = '{not json' WHERE ns = ? AND id = ?",
        ns.as_str(),
        "bad-retry",
    )
    .await?;
    corrupt(
        &storage,
        "UPDATE reliable_executor_tasks SET created_at = -5 WHERE ns = ? AND id = ?",
        ns.as_str(),
        "bad-time",
    )
    .await?;

    for (id, what) in [("bad-state", "BOGUS"), ("bad-retry", "retry policy"), ("bad-time", "created_at")] {
        match storage.get(&ns, &TaskId::new(id)?).await {
            Err(Error::Corrupt { id: got, reason }) => {
                assert_eq!(got.as_str(), id);
                assert!(reason.contains(what), "{id}: {reason}");
            }
            other => panic!("{id}: expected Corrupt, got {other:?}"),
        }
    }

    // The claim hands out the good task and moves the unreadable waiting
    // ones to ERROR with the reason; a second claim finds nothing.
    let me = WorkerId::generate();
    let claimed = storage.claim(&ns, &me, 10, Duration::from_secs(30)).await?;
    assert_eq!(claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["good"]);
    assert!(storage.claim(&ns, &me, 10, Duration::from_secs(30)).await?.is_empty());
    let counts = storage.counts(&ns).await?;
    assert_eq!(counts.get(TaskState::Error), 2, "{counts:?}");
    assert_eq!(counts.get(TaskState::Running), 1, "{counts:?}");
    assert_eq!(counts.total(), 3, "the BOGUS row is left out of the counts: {counts:?}");
    let row: (String, Option<String>) = sqlx::query_as(
        "SELECT state, last_error FROM reliable_executor_tasks WHERE ns = ? AND id = 'bad-retry'",
    )
    .bind(ns.as_str())
    .fetch_one(storage.pool())
    .await?;
    assert_eq!(row.0, "ERROR");
    assert!(row.1.unwrap_or_default().contains("corrupt record"));

    // Listing a state with a corrupt row says which row, instead of panicking.
    let listed = storage.list(&ns, ListQuery::new(TaskState::Error, 10)).await;
    assert!(matches!(listed, Err(Error::Corrupt { .. })), "{listed:?}");
    cleanup(&storage, &ns).await;
    Ok(())
}
