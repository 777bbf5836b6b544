//! Several processes starting at once against an empty database: each
//! connects, the schema is complete when it does, each migration ran once.
//! Its 100 child processes load the machine, which would skew the latency
//! checks of other tests running beside it: it holds `support::serial()`.

use executor_core::storage::{Presence, ScheduleStore};
use std::{process::Stdio, time::Duration};

use executor_core::{WorkerId, queue::ClaimPlan, schedule::Schedule, storage::Storage, testing};
use reliable_executor_mysql::{MIGRATIONS_TABLE, MySqlOptions};
use tokio::time::Instant;

use crate::support::EmptyDatabase;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const DB_URL_VAR: &str = "REX_MIGRATE_URL";
/// `migrate_child` as the harness of the test binary `it` names it.
const CHILD: &str = "first_start::migrate_child";
const PROCESSES: usize = 5;
const ROUNDS: usize = 20;

/// One process starting against the database in `REX_MIGRATE_URL`: connect
/// (migrates and checks the schema), then use every table.
#[tokio::test(flavor = "current_thread")]
#[ignore = "helper: started as a child process by `concurrent_first_starts_migrate_once`"]
async fn migrate_child() -> TestResult {
    let url = std::env::var(DB_URL_VAR)?;
    let s = MySqlOptions::new().max_connections(1).connect(&url).await?;
    let ns = testing::unique_namespace("my-mig");
    s.submit(&ns, testing::new_task("probe")).await?;
    // Claims again for a moment: once in a full CI run (1 of 100 children)
    // the first claim right after the submit came back empty, as InnoDB's
    // SKIP LOCKED may skip a row whose inserting transaction has only just
    // committed; the next claim round takes it, as a worker's would.
    let worker = WorkerId::generate();
    let mut claimed = Vec::new();
    for _ in 0..40 {
        claimed = s.claim(&ns, &worker, &ClaimPlan::default_queue(1), Duration::from_secs(30)).await?;
        if !claimed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if claimed.len() != 1 {
        return Err(format!("claimed {} tasks within 2 s", claimed.len()).into());
    }
    s.acquire_leadership(&ns, &WorkerId::generate(), Duration::from_secs(1)).await?;
    s.announce(&ns, &WorkerId::generate(), &["probe".to_owned()], Duration::from_secs(1)).await?;
    s.put_schedule(&ns, &Schedule::new("probe", "probe", "* * * * *", "UTC")?).await?;
    if s.schedules(&ns).await?.len() != 1 {
        return Err("the schedule was not stored".into());
    }
    Ok(())
}

/// Issue 12 item 5: `GET_LOCK(name, -1)` returns NULL at once on MariaDB
/// 10.11 and sqlx ignores it, so concurrent first starts were not
/// serialised: 2 of 3 processes failed ("Duplicate entry" or "partially
/// applied"), and once all returned Ok before the leaders table existed.
/// Here 5 processes start at once on a new, empty database, 20 times: each
/// must connect, find the schema complete and use it, and each migration is
/// recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_starts_migrate_once() -> TestResult {
    let _serial = crate::support::serial().await;
    let exe = std::env::current_exe()?;
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))?.count();
    let started = Instant::now();
    for round in 0..ROUNDS {
        let db = EmptyDatabase::create("migrate").await?;
        let mut children = Vec::new();
        for _ in 0..PROCESSES {
            children.push(
                tokio::process::Command::new(&exe)
                    .args(["--exact", CHILD, "--ignored", "--test-threads=1"])
                    .env(DB_URL_VAR, &db.url)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()?,
            );
        }
        let mut failures = Vec::new();
        for child in children {
            let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output()).await??;
            if !out.status.success() {
                failures.push(format!(
                    "{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        let pool = db.pool(1).await?;
        let applied: Result<(i64, i64), _> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*), CAST(COALESCE(SUM(success), 0) AS SIGNED) FROM {MIGRATIONS_TABLE}"
        )))
        .fetch_one(&pool)
        .await;
        pool.close().await;
        db.drop_now().await?;
        assert!(
            failures.is_empty(),
            "round {round}: {} of {PROCESSES} starts failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
        let expected = i64::try_from(migrations)?;
        assert_eq!(applied?, (expected, expected), "round {round}: each migration recorded once, successful");
    }
    eprintln!("{ROUNDS} rounds of {PROCESSES} concurrent first starts in {:?}", started.elapsed());
    Ok(())
}
