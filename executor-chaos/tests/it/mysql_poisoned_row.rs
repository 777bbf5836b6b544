//! Regression (found by `bad_input.rs`'s `mysql_row_garbage`): one task row
//! whose `attempts` (INT UNSIGNED) or `fence` (BIGINT UNSIGNED) was edited to
//! its type's maximum makes the claim's `SET fence = fence + 1, attempts =
//! attempts + 1` (executor-mysql/src/claim.rs, the batch UPDATE) fail with
//! "out of range" for the whole batch. The claim is retried with the same
//! earliest-due batch forever, so no other task in the namespace runs: a
//! stuck worker. Invariant 6 wants that task sent to ERROR (or skipped) and
//! the rest to carry on. Fixed in executor-mysql's claim; these tests keep it fixed.

use std::time::Duration;

use executor_chaos::store::ChaosStore;
use executor_core::{
    Executor, Handler, Namespace, TaskContext, TaskError, TaskId, TaskState, storage::Storage,
};
use executor_mysql::MySqlStorage;

use crate::common::{self, TestResult};

async fn poisoned(update: &'static str) -> TestResult {
    let url = common::mysql_url();
    let storage = MySqlStorage::connect_once(&url)
        .await
        .map_err(|e| format!("MariaDB at {url} does not answer ({e}); start it with scripts/test.sh"))?;
    let ns = Namespace::new(common::unique_ns("poison"))?;
    let mut ids = Vec::new();
    for i in 0..4 {
        let id = TaskId::new(format!("p{i}"))?;
        storage
            .submit(&ns, {
                let mut t = executor_core::testing::new_task(id.as_str());
                t.name = "poison_step".to_owned();
                t.payload = b"1".to_vec();
                t
            })
            .await?;
        ids.push(id);
    }
    sqlx::query(update).bind(ns.as_str()).bind(ids[0].as_str()).execute(storage.pool()).await?;
    let executor = Executor::builder(storage.clone())
        .namespace(ns.as_str())
        .lease(Duration::from_secs(1))
        .heartbeat_interval(Duration::from_millis(250))
        .handler(Handler::new("poison_step", |_: u64, _: TaskContext| async { Ok::<(), TaskError>(()) }))
        .build()
        .await?;
    let running = executor.start();
    let mut stuck = Vec::new();
    for id in &ids[1..] {
        match executor.wait_for(id, Duration::from_secs(5)).await {
            Ok(rec) if rec.state == TaskState::Completed => {}
            other => stuck.push(format!("{id}: {other:?}")),
        }
    }
    running.shutdown().await?;
    storage.purge(&ns).await?;
    assert!(stuck.is_empty(), "after `{update}` on one task, the others never ran: {stuck:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_at_u32_max_does_not_block_other_tasks() -> TestResult {
    let _one = crate::common::one_at_a_time_async().await;
    poisoned("UPDATE reliable_executor_tasks SET attempts = 4294967295 WHERE ns = ? AND id = ?").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_at_u64_max_does_not_block_other_tasks() -> TestResult {
    let _one = crate::common::one_at_a_time_async().await;
    poisoned("UPDATE reliable_executor_tasks SET fence = 18446744073709551615 WHERE ns = ? AND id = ?").await
}
