//! Several processes starting at once against an empty database, and the
//! wake-up latency between processes that share no in-process signal.

mod support;

use std::time::Duration;

use executor_core::{Storage, WorkerId, testing};
use executor_mysql::{MIGRATIONS_TABLE, MySqlOptions, MySqlStorage};
use support::{cleanup, pool, url};
use tokio::time::Instant;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// `MYSQL_URL` with its database replaced by `db`.
fn url_with_database(db: &str) -> String {
    let base = url();
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h.to_owned(), format!("?{q}")),
        None => (base.clone(), String::new()),
    };
    let server = head.rsplit_once('/').map_or(head.as_str(), |(s, _)| s).to_owned();
    format!("{server}/{db}{query}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_starts_migrate_once() -> TestResult {
    let admin = pool(1).await;
    let db = format!("rex_migrate_{}", uuid_suffix());
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}"))).execute(&admin).await?;
    let url = url_with_database(&db);
    let starts = (0..4).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { MySqlOptions::new().max_connections(2).connect(&url).await })
    });
    let mut result = Ok(());
    for s in starts {
        if let Err(e) = s.await? {
            result = Err(format!("a concurrent start failed: {e}"));
        }
    }
    let applied: Result<i64, _> =
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {db}.{MIGRATIONS_TABLE}")))
            .fetch_one(&admin)
            .await;
    let tables: Result<i64, _> = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'reliable_executor_%'",
    )
    .bind(&db)
    .fetch_one(&admin)
    .await;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {db}"))).execute(&admin).await?;
    result?;
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))?.count();
    assert_eq!(applied?, i64::try_from(migrations)?, "each migration recorded once");
    assert_eq!(tables?, 2);
    Ok(())
}

fn uuid_suffix() -> String {
    testing::unique_namespace("x").as_str().replace(['-', ':', '.'], "_")
}

/// A submit from another process (its own storage, so no shared `Notify`)
/// is seen within the poll interval's ceiling; a submit in the same process
/// wakes the waiter at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wake_latency_within_and_across_processes() -> TestResult {
    let poll_max = Duration::from_millis(250);
    let opts = || MySqlOptions::new().max_connections(2).poll_interval(Duration::from_millis(5), poll_max);
    let waiter: MySqlStorage = opts().open(pool(2).await).await?;
    let other: MySqlStorage = opts().open(pool(2).await).await?;
    let ns = testing::unique_namespace("my-wake");
    let me = WorkerId::generate();

    let mut across = Vec::new();
    let mut within = Vec::new();
    for round in 0..6 {
        let (submitter, into) = if round % 2 == 0 { (&other, &mut across) } else { (&waiter, &mut within) };
        let id = format!("w{round}");
        let wait = async {
            let start = Instant::now();
            waiter.wait_for_work(&ns, Duration::from_secs(5)).await?;
            Ok::<_, executor_core::Error>(Instant::now() - start)
        };
        let submit = async {
            // Long enough for the waiter to back off to its longest interval.
            tokio::time::sleep(Duration::from_millis(600)).await;
            let at = Instant::now();
            submitter.submit(&ns, testing::new_task(&id)).await?;
            Ok::<_, executor_core::Error>(at)
        };
        let (waited, submitted_at) = tokio::try_join!(wait, submit)?;
        let started = Instant::now() - submitted_at;
        into.push(started);
        assert!(waited >= Duration::from_millis(590), "woke before the submit: {waited:?}");
        let claimed = waiter.claim(&ns, &me, 1, Duration::from_secs(30)).await?;
        assert_eq!(claimed.len(), 1);
    }
    eprintln!("wake after a submit in another process: {across:?}; in the same process: {within:?}");
    for d in &across {
        assert!(*d <= poll_max + Duration::from_millis(150), "cross-process wake took {d:?}");
    }
    for d in &within {
        assert!(*d <= Duration::from_millis(50), "in-process wake took {d:?}");
    }
    cleanup(&waiter, &ns).await;
    Ok(())
}
