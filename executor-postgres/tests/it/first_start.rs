//! Several processes starting at once against an empty database: each
//! connects, the schema is complete when it does, each migration ran once.
//! Its 100 child processes load the machine: it holds `support::serial()`.

use executor_core::storage::{Presence, ScheduleStore};
use std::{process::Stdio, time::Duration};

use executor_core::{WorkerId, queue::ClaimPlan, schedule::Schedule, storage::Storage, testing};
use reliable_executor_postgres::{MIGRATIONS_TABLE, PostgresOptions};
use sqlx::{PgPool, Row, postgres::PgPoolOptions};
use tokio::time::Instant;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const DB_URL_VAR: &str = "REX_MIGRATE_URL";
/// `migrate_child` as the harness of the test binary `it` names it.
const CHILD: &str = "first_start::migrate_child";
const PROCESSES: usize = 5;
const ROUNDS: usize = 20;

/// A database of its own, dropped by [`EmptyDatabase::drop_now`].
struct EmptyDatabase {
    name: String,
    url: String,
    admin: PgPool,
}

impl EmptyDatabase {
    async fn create() -> Result<Self, Box<dyn std::error::Error>> {
        let admin = crate::support::pool(2).await;
        let name = format!("rex_mig_{}", &uuid_like());
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&admin).await?;
        let base = crate::support::url();
        let (head, query) = match base.split_once('?') {
            Some((h, q)) => (h.to_owned(), format!("?{q}")),
            None => (base.clone(), String::new()),
        };
        let server = head.rsplit_once('/').map_or(head.as_str(), |(s, _)| s).to_owned();
        Ok(Self { url: format!("{server}/{name}{query}"), name, admin })
    }

    async fn drop_now(self) -> Result<(), sqlx::Error> {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)))
            .execute(&self.admin)
            .await?;
        self.admin.close().await;
        Ok(())
    }
}

/// 16 hex digits from the clock and the process id: unique enough for a
/// test's scratch database.
fn uuid_like() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}

/// One process starting against the database in `REX_MIGRATE_URL`: connect
/// (migrates and checks the schema), then use every table.
#[tokio::test(flavor = "current_thread")]
#[ignore = "helper: started as a child process by `concurrent_first_starts_migrate_once`"]
async fn migrate_child() -> TestResult {
    let url = std::env::var(DB_URL_VAR)?;
    let s = PostgresOptions::new().max_connections(1).connect(&url).await?;
    let ns = testing::unique_namespace("pg-mig");
    s.submit(&ns, testing::new_task("probe")).await?;
    let claimed =
        s.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::from_secs(30)).await?;
    if claimed.len() != 1 {
        return Err(format!("claimed {} tasks", claimed.len()).into());
    }
    s.acquire_leadership(&ns, &WorkerId::generate(), Duration::from_secs(1)).await?;
    s.announce(&ns, &WorkerId::generate(), &["probe".to_owned()], Duration::from_secs(1)).await?;
    s.put_schedule(&ns, &Schedule::new("probe", "probe", "* * * * *", "UTC")?).await?;
    if s.schedules(&ns).await?.len() != 1 {
        return Err("the schedule was not stored".into());
    }
    // Closing returns (the kept connections and the listener's go back).
    tokio::time::timeout(Duration::from_secs(10), s.close()).await?;
    Ok(())
}

/// 5 processes start at once on a new, empty database, 20 times: each must
/// connect, find the schema complete and use it, and each migration is
/// recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_starts_migrate_once() -> TestResult {
    let _serial = crate::support::serial().await;
    let exe = std::env::current_exe()?;
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))?.count();
    let started = Instant::now();
    for round in 0..ROUNDS {
        let db = EmptyDatabase::create().await?;
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
        let pool = PgPoolOptions::new().max_connections(1).connect(&db.url).await?;
        let applied = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) AS n, COUNT(*) FILTER (WHERE success) AS ok FROM {MIGRATIONS_TABLE}"
        )))
        .fetch_one(&pool)
        .await
        .and_then(|r| Ok((r.try_get::<i64, _>("n")?, r.try_get::<i64, _>("ok")?)));
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
