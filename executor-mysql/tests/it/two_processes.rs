//! Two executor processes on one namespace over 5,000 tasks: each task runs
//! exactly once. The parent test starts this test binary twice more, each
//! child running `two_process_child` as a full executor.

use std::{process::Stdio, time::Duration};

use executor_core::{
    Executor, Handler, TaskContext, TaskId, TaskState,
    storage::{NewTask, Storage},
    testing,
};
use reliable_executor_mysql::MySqlStorage;
use tokio::time::Instant;

use crate::support::{cleanup, storage, url};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TASKS: usize = 5_000;
const NS_VAR: &str = "REX_TWO_PROCESS_NS";
/// `two_process_child` as the harness of the test binary `it` names it.
const CHILD: &str = "two_processes::two_process_child";

async fn runs_table(pool: &sqlx::MySqlPool) -> Result<(), sqlx::Error> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS rex_test_runs (ns VARCHAR(64) NOT NULL, task_id VARCHAR(191) NOT NULL, \
         process INT UNSIGNED NOT NULL, fence BIGINT UNSIGNED NOT NULL, KEY (ns, task_id))",
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// One executor process: runs `mark` tasks (each records its run in
/// `rex_test_runs`) until the namespace has no waiting or running task left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "helper: started as a child process by `two_processes_run_each_task_once`"]
async fn two_process_child() -> TestResult {
    let ns = std::env::var(NS_VAR)?;
    let s = MySqlStorage::connect(&url()).await?;
    let pool = s.pool().clone();
    let me = std::process::id();
    let handler = Handler::new("mark", move |_: (), ctx: TaskContext| {
        let pool = pool.clone();
        async move {
            sqlx::query("INSERT INTO rex_test_runs (ns, task_id, process, fence) VALUES (?, ?, ?, ?)")
                .bind(std::env::var(NS_VAR).unwrap_or_default())
                .bind(ctx.id().as_str())
                .bind(me)
                .bind(ctx.fence())
                .execute(&pool)
                .await
                .map(|_| ())
        }
    });
    let executor = Executor::builder(s).namespace(ns).concurrency(32).handler(handler).build().await?;
    let running = executor.start();
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        let c = executor.counts().await?;
        let busy = c.get(TaskState::Created) + c.get(TaskState::Pending) + c.get(TaskState::Running);
        if (c.total() > 0 && busy == 0) || Instant::now() > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_run_each_task_once() -> TestResult {
    let _serial = crate::support::serial().await;
    let s = storage().await;
    let ns = testing::unique_namespace("my-2p");
    runs_table(s.pool()).await?;
    let tasks: Vec<NewTask> = (0..TASKS)
        .map(|_| {
            let mut t = testing::new_task(TaskId::generate().as_str());
            t.name = "mark".to_owned();
            t.payload = b"null".to_vec();
            t
        })
        .collect();
    // Both processes start before the tasks land, so both compete for them.
    let exe = std::env::current_exe()?;
    let started = Instant::now();
    let mut children = Vec::new();
    for _ in 0..2 {
        children.push(
            tokio::process::Command::new(&exe)
                .args(["--exact", CHILD, "--ignored", "--nocapture", "--test-threads=1"])
                .env(NS_VAR, ns.as_str())
                .stdout(Stdio::null())
                .kill_on_drop(true)
                .spawn()?,
        );
    }
    for r in s.submit_many(&ns, tasks).await? {
        r?;
    }
    for mut child in children {
        let status = tokio::time::timeout(Duration::from_secs(150), child.wait()).await??;
        assert!(status.success(), "an executor process failed: {status}");
    }
    let elapsed = started.elapsed();

    let counts = s.counts(&ns).await?;
    assert_eq!(counts.get(TaskState::Completed), TASKS as u64, "{counts:?}");
    let (runs, distinct): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), COUNT(DISTINCT task_id) FROM rex_test_runs WHERE ns = ?")
            .bind(ns.as_str())
            .fetch_one(s.pool())
            .await?;
    let per_process: Vec<(u32, i64)> =
        sqlx::query_as("SELECT process, COUNT(*) FROM rex_test_runs WHERE ns = ? GROUP BY process")
            .bind(ns.as_str())
            .fetch_all(s.pool())
            .await?;
    sqlx::query("DELETE FROM rex_test_runs WHERE ns = ?").bind(ns.as_str()).execute(s.pool()).await?;
    cleanup(&s, &ns).await;
    assert_eq!(distinct, TASKS as i64, "every task ran");
    assert_eq!(runs, TASKS as i64, "no task ran twice");
    assert_eq!(per_process.len(), 2, "both processes ran tasks: {per_process:?}");
    eprintln!("two processes ran {TASKS} tasks once each in {elapsed:?} (incl. start-up): {per_process:?}");
    Ok(())
}
