//! Transactional submits (`submit_in`) beside the caller's own rows: the
//! task exists if and only if the caller's transaction commits, whether it
//! rolls back, a thousand commit and roll back at once, or the process dies
//! before its commit.

use std::{collections::BTreeSet, process::Stdio, sync::Arc, time::Duration};

use executor_core::{
    Client, Namespace, SubmitOutcome, TaskState, WorkerId, queue::ClaimPlan, storage::NewTask,
    storage::Storage, testing,
};
use sqlx::Database;
use tokio::io::AsyncBufReadExt;

use super::{TestDb, TestResult, cleanup, fresh, placeholders, run, serial, storage};
use crate::{
    Dialect, SqlStorage,
    dialect::SubmitIn,
    stmt::{ArgsOf, Cols, SqlDb, Value},
};

const LEASE: Duration = Duration::from_secs(30);

/// The connection a transaction of dialect `D` runs on.
type ConnOf<D> = <<D as Dialect>::Db as Database>::Connection;

/// A business table of a test's own (`rex_orders_<namespace>`), dropped
/// afterwards: the caller's rows a transactional submit sits beside.
#[derive(Debug)]
pub struct Orders<D: Dialect> {
    table: String,
    storage: SqlStorage<D>,
}

impl<D: Dialect> Orders<D> {
    /// Creates the table.
    ///
    /// # Errors
    /// The statement failed.
    pub async fn create(storage: &SqlStorage<D>, ns: &Namespace) -> Result<Self, sqlx::Error> {
        let table = format!("rex_orders_{}", ns.as_str().replace('-', "_"));
        run(storage, &format!("CREATE TABLE {table} (id BIGINT PRIMARY KEY)"), &[]).await?;
        Ok(Self { table, storage: storage.clone() })
    }

    /// The INSERT of one order, `$1` its id, as the dialect writes it.
    pub fn insert(&self) -> String {
        placeholders::<D>(&format!("INSERT INTO {} (id) VALUES ($1)", self.table))
    }

    /// The ids of the orders committed.
    ///
    /// # Errors
    /// The statement failed.
    pub async fn ids(&self) -> Result<BTreeSet<i64>, Box<dyn std::error::Error>> {
        let q = sqlx::query::<D::Db>(sqlx::AssertSqlSafe(format!("SELECT id FROM {}", self.table)));
        let rows = D::Db::fetch_all(q, self.storage.dialect().conns()).await?;
        Ok(rows.iter().map(|r| r.int("id")).collect::<Result<_, _>>()?)
    }

    /// Drops the table.
    pub async fn drop_table(self) {
        let _ = run(&self.storage, &format!("DROP TABLE IF EXISTS {}", self.table), &[]).await;
    }
}

/// Claims until `n` tasks came back or `within` passed; the ids claimed.
pub async fn claim_all<D: Dialect>(
    s: &SqlStorage<D>,
    ns: &Namespace,
    n: usize,
    within: Duration,
) -> Vec<String> {
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

/// A rolled-back submit never exists: not read, not counted, not claimed,
/// and its id is free again.
pub async fn a_rolled_back_submit_never_exists<D: TestDb>() -> TestResult
where
    D::Dialect: SubmitIn<ConnOf<D::Dialect>>,
    for<'c> &'c mut ConnOf<D::Dialect>: sqlx::Executor<'c, Database = <D::Dialect as Dialect>::Db>,
    ArgsOf<D::Dialect>: sqlx::IntoArguments<<D::Dialect as Dialect>::Db>,
{
    let (s, ns) = fresh::<D>().await;
    let orders = Orders::create(&s, &ns).await?;
    let mut tx = s.pool().begin().await?;
    let insert = orders.insert();
    let q =
        SqlDb::bind(sqlx::query::<<D::Dialect as Dialect>::Db>(sqlx::AssertSqlSafe(insert)), Value::Int(2));
    q.execute(&mut *tx).await?;
    let submitted = s.submit_in(&mut *tx, &ns, testing::new_task("order-2")).await?;
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

/// A thousand transactions at once, a third rolled back: exactly the
/// committed tasks run, once each, beside exactly the committed rows.
pub async fn a_thousand_concurrent_transactions_run_exactly_the_committed_tasks<D: TestDb>() -> TestResult
where
    D::Dialect: SubmitIn<ConnOf<D::Dialect>>,
    for<'c> &'c mut ConnOf<D::Dialect>: sqlx::Executor<'c, Database = <D::Dialect as Dialect>::Db>,
    ArgsOf<D::Dialect>: sqlx::IntoArguments<<D::Dialect as Dialect>::Db>,
{
    let _serial = serial().await;
    let (s, ns) = fresh::<D>().await;
    let orders = Orders::create(&s, &ns).await?;
    let client = Arc::new(Client::without_name_check(s.clone(), ns.clone()));
    let insert = Arc::new(orders.insert());
    let mut handles = Vec::new();
    for i in 0..1000_i64 {
        let (client, s, insert) = (Arc::clone(&client), s.clone(), Arc::clone(&insert));
        handles.push(tokio::spawn(async move {
            let mut tx = s.pool().begin().await?;
            let text = sqlx::AssertSqlSafe(insert.as_str().to_owned());
            let q = SqlDb::bind(sqlx::query::<<D::Dialect as Dialect>::Db>(text), Value::Int(i));
            q.execute(&mut *tx).await?;
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

/// The variable naming the crash child's namespace.
const CHILD_NS: &str = "REX_CRASH_NS";

/// Opens a transaction, writes the order and submits its task, says so on
/// stdout, and waits to be killed before it commits: the child process of
/// [`a_process_killed_before_its_commit_leaves_neither`].
pub async fn crash_child<D: TestDb>() -> TestResult
where
    D::Dialect: SubmitIn<ConnOf<D::Dialect>>,
    for<'c> &'c mut ConnOf<D::Dialect>: sqlx::Executor<'c, Database = <D::Dialect as Dialect>::Db>,
    ArgsOf<D::Dialect>: sqlx::IntoArguments<<D::Dialect as Dialect>::Db>,
{
    let ns = Namespace::new(std::env::var(CHILD_NS)?)?;
    let s = storage::<D>().await;
    let table = format!("rex_orders_{}", ns.as_str().replace('-', "_"));
    let mut tx = s.pool().begin().await?;
    sqlx::query::<<D::Dialect as Dialect>::Db>(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {table} (id) VALUES (7)"
    )))
    .execute(&mut *tx)
    .await?;
    s.submit_in(&mut *tx, &ns, testing::new_task("order-7")).await?;
    println!("WRITTEN");
    tokio::time::sleep(Duration::from_secs(120)).await;
    tx.commit().await?;
    Ok(())
}

/// A process killed after it wrote in its transaction, before the commit,
/// leaves neither the task nor the row; the id is free. `child` is the full
/// test path of [`crash_child`] in the running binary.
pub async fn a_process_killed_before_its_commit_leaves_neither<D: TestDb>(child: &str) -> TestResult {
    // A child process: kept apart from the other tests that load the machine.
    let _serial = serial().await;
    let (s, ns) = fresh::<D>().await;
    let orders = Orders::create(&s, &ns).await?;
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["--exact", child, "--ignored", "--test-threads=1", "--nocapture"])
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
