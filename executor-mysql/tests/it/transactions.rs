//! Transactional submits (`submit_in`) on MySQL/MariaDB: the task exists if
//! and only if the caller's transaction commits; claimers see it at their
//! next poll (MySQL has no notification on commit).

use std::{collections::BTreeSet, process::Stdio, sync::Arc, time::Duration};

use executor_core::{
    Client, Error, Namespace, QueueName, SubmitOutcome, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Debounce, NewTask, Storage, SubmitMode},
    testing,
};
use reliable_executor_mysql::MySqlStorage;
use sqlx::{MySqlPool, Row};
use tokio::io::AsyncBufReadExt;

use crate::support::{cleanup, fresh, pool, storage};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const LEASE: Duration = Duration::from_secs(30);

/// A business table of the test's own, dropped afterwards.
struct Orders {
    table: String,
    pool: MySqlPool,
}

impl Orders {
    async fn create(ns: &Namespace) -> Result<Self, Box<dyn std::error::Error>> {
        let table = format!("rex_orders_{}", ns.as_str().replace('-', "_"));
        let pool = pool(4).await;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY) ENGINE = InnoDB"
        )))
        .execute(&pool)
        .await?;
        Ok(Self { table, pool })
    }

    fn insert(&self) -> String {
        format!("INSERT INTO {} (id) VALUES (?)", self.table)
    }

    async fn ids(&self) -> Result<BTreeSet<i64>, sqlx::Error> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT id FROM {}", self.table)))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| r.try_get::<i64, _>("id")).collect()
    }

    async fn drop_table(self) {
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE IF EXISTS {}", self.table)))
            .execute(&self.pool)
            .await;
    }
}

/// Claims until `n` tasks came back or `within` passed.
async fn claim_all(s: &MySqlStorage, ns: &Namespace, n: usize, within: Duration) -> Vec<String> {
    let worker = WorkerId::generate();
    let end = tokio::time::Instant::now() + within;
    let mut ids = Vec::new();
    while ids.len() < n && tokio::time::Instant::now() < end {
        match s.claim(ns, &worker, &ClaimPlan::default_queue(100), LEASE).await {
            Ok(batch) if batch.is_empty() => tokio::time::sleep(Duration::from_millis(20)).await,
            Ok(batch) => ids.extend(batch.into_iter().map(|t| t.id.as_str().to_owned())),
            Err(e) => panic!("claim failed: {e}"),
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_submit_exists_once_committed_and_is_seen_by_the_next_poll() -> TestResult {
    let (s, ns) = fresh().await;
    let orders = Orders::create(&ns).await?;
    let other = storage().await;
    let waiter = {
        let (other, ns) = (other.clone(), ns.clone());
        tokio::spawn(async move {
            other.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(50)).await
        })
    };
    let mut tx = s.pool().begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(orders.insert())).bind(1_i64).execute(&mut *tx).await?;
    let submitted = s.submit_in(&mut tx, &ns, testing::new_task("order-1")).await?;
    assert_eq!(submitted.outcome, SubmitOutcome::Created);
    assert!(other.get(&ns, &submitted.id).await?.is_none(), "visible before the commit");
    assert!(
        claim_all(&other, &ns, 1, Duration::from_millis(200)).await.is_empty(),
        "claimed before the commit"
    );
    tx.commit().await?;
    // The other storage's poll (250 ms at most by default) finds it.
    tokio::time::timeout(Duration::from_secs(5), waiter).await???;
    assert_eq!(claim_all(&other, &ns, 1, Duration::from_secs(5)).await, vec!["order-1".to_owned()]);
    assert_eq!(orders.ids().await?, BTreeSet::from([1]));
    orders.drop_table().await;
    cleanup(&s, &ns).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_submit_never_exists() -> TestResult {
    let (s, ns) = fresh().await;
    let orders = Orders::create(&ns).await?;
    let mut tx = s.pool().begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(orders.insert())).bind(2_i64).execute(&mut *tx).await?;
    let submitted = s.submit_in(&mut tx, &ns, testing::new_task("order-2")).await?;
    tx.rollback().await?;
    assert!(s.get(&ns, &submitted.id).await?.is_none());
    assert_eq!(s.counts(&ns).await?.total(), 0);
    assert!(claim_all(&s, &ns, 1, Duration::from_millis(300)).await.is_empty());
    assert!(orders.ids().await?.is_empty());
    // The id is free again.
    assert_eq!(s.submit(&ns, testing::new_task("order-2")).await?.outcome, SubmitOutcome::Created);
    orders.drop_table().await;
    cleanup(&s, &ns).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_submits_keep_their_meaning_and_debounce_is_refused_in_a_transaction() -> TestResult {
    let (s, ns) = fresh().await;
    s.submit(&ns, testing::new_task("taken")).await?;
    let mut tx = s.pool().begin().await?;
    // A plain submit of a taken id is refused, and the transaction goes on.
    let mut dup = testing::new_task("taken");
    match s.submit_in(&mut tx, &ns, dup.clone()).await {
        Err(Error::DuplicateId(id)) => assert_eq!(id.as_str(), "taken"),
        other => panic!("expected DuplicateId, got {other:?}"),
    }
    dup.mode = SubmitMode::Idempotent;
    assert_eq!(s.submit_in(&mut tx, &ns, dup).await?.outcome, SubmitOutcome::Existing);
    let mut debounced = testing::new_task("deb-1");
    debounced.mode = SubmitMode::Debounce(Debounce::new("key", Duration::from_secs(60)));
    assert!(matches!(s.submit_in(&mut tx, &ns, debounced).await, Err(Error::Unsupported { .. })));
    assert_eq!(s.submit_in(&mut tx, &ns, testing::new_task("fresh")).await?.outcome, SubmitOutcome::Created);
    tx.commit().await?;
    assert_eq!(s.counts(&ns).await?.total(), 2, "taken and fresh");
    cleanup(&s, &ns).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_transactions_run_exactly_the_committed_tasks() -> TestResult {
    let _serial = crate::support::serial().await;
    let (s, ns) = fresh().await;
    let orders = Orders::create(&ns).await?;
    let client = Arc::new(Client::without_name_check(s.clone(), ns.clone()));
    let insert = Arc::new(orders.insert());
    let mut handles = Vec::new();
    for i in 0..1000_i64 {
        let (client, s, insert) = (Arc::clone(&client), s.clone(), Arc::clone(&insert));
        handles.push(tokio::spawn(async move {
            let mut tx = s.pool().begin().await?;
            sqlx::query(sqlx::AssertSqlSafe(insert.as_str())).bind(i).execute(&mut *tx).await?;
            let task = NewTask::new(executor_core::TaskId::new(format!("o{i:04}"))?, "order", b"{}".to_vec());
            client.submit_in(&mut *tx, task).await?;
            if i % 3 == 0 {
                tx.rollback().await?;
            } else {
                tx.commit().await?;
            }
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for h in handles {
        h.await?.map_err(|e| e.to_string())?;
    }
    let committed: BTreeSet<String> = (0..1000).filter(|i| i % 3 != 0).map(|i| format!("o{i:04}")).collect();
    let ran: Vec<String> = claim_all(&s, &ns, committed.len(), Duration::from_secs(30)).await;
    let ran_set: BTreeSet<String> = ran.iter().cloned().collect();
    assert_eq!(ran.len(), ran_set.len(), "a task claimed twice");
    assert_eq!(ran_set, committed);
    let order_ids: BTreeSet<String> = orders.ids().await?.into_iter().map(|i| format!("o{i:04}")).collect();
    assert_eq!(order_ids, committed, "tasks and business rows differ");
    assert_eq!(s.counts(&ns).await?.get(TaskState::Running), committed.len() as u64);
    orders.drop_table().await;
    cleanup(&s, &ns).await;
    Ok(())
}

const CHILD: &str = "transactions::crash_child";
const CHILD_NS: &str = "REX_CRASH_NS";

/// Opens a transaction, writes the order and submits its task, says so on
/// stdout, and waits to be killed before it commits.
#[tokio::test(flavor = "current_thread")]
#[ignore = "helper: started as a child process by `a_process_killed_before_its_commit_leaves_neither`"]
async fn crash_child() -> TestResult {
    let ns = Namespace::new(std::env::var(CHILD_NS)?)?;
    let s = storage().await;
    let table = format!("rex_orders_{}", ns.as_str().replace('-', "_"));
    let mut tx = s.pool().begin().await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("INSERT INTO {table} (id) VALUES (7)")))
        .execute(&mut *tx)
        .await?;
    s.submit_in(&mut tx, &ns, testing::new_task("order-7")).await?;
    println!("WRITTEN");
    tokio::time::sleep(Duration::from_secs(120)).await;
    tx.commit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_before_its_commit_leaves_neither() -> TestResult {
    // A child process: kept apart from the other tests that load the machine.
    let _serial = crate::support::serial().await;
    let (s, ns) = fresh().await;
    let orders = Orders::create(&ns).await?;
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["--exact", CHILD, "--ignored", "--test-threads=1", "--nocapture"])
        .env(CHILD_NS, ns.as_str())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let written = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await? {
            if line.contains("WRITTEN") {
                return Ok::<bool, std::io::Error>(true);
            }
        }
        Ok(false)
    })
    .await??;
    assert!(written, "the child ended before writing");
    child.start_kill()?;
    child.wait().await?;
    // The server sees the connection drop and rolls the transaction back.
    let task = s.get(&ns, &executor_core::TaskId::new("order-7")?).await?;
    assert!(task.is_none(), "the task of an uncommitted transaction is visible");
    assert!(orders.ids().await?.is_empty(), "the order of an uncommitted transaction is visible");
    // Nothing to claim, and the id is free: the row was never committed (an
    // INSERT of the same id waits for the dying transaction, then succeeds).
    assert!(claim_all(&s, &ns, 1, Duration::from_millis(300)).await.is_empty());
    assert_eq!(s.submit(&ns, testing::new_task("order-7")).await?.outcome, SubmitOutcome::Created);
    orders.drop_table().await;
    cleanup(&s, &ns).await;
    Ok(())
}
