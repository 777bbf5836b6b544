//! Regression probe for the desynchronised connection seen once in
//! `bad_input.rs` (`PrepareOk expected 12 bytes but got 7 bytes`): store
//! calls dropped mid-statement (as the runtime's claim loop drops `claim`
//! and `wait_for_work` at shutdown), then ordinary calls on the same
//! storage and on its pool. A connection whose reply was never read must
//! not be handed out again.

use std::time::Duration;

use executor_chaos::store::ChaosStore;
use executor_core::{Namespace, WorkerId, queue::ClaimPlan, storage::Storage};
use executor_mysql::MySqlStorage;

use crate::common::{self, TestResult};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_dropped_mid_statement_leave_no_desynchronised_connection() -> TestResult {
    let _one = crate::common::one_at_a_time_async().await;
    let url = common::mysql_url();
    let storage = MySqlStorage::connect_once(&url)
        .await
        .map_err(|e| format!("MariaDB at {url} does not answer ({e}); start it with scripts/test.sh"))?;
    let ns = Namespace::new(common::unique_ns("cancel"))?;
    let worker = WorkerId::generate();
    let mut errors = Vec::new();
    for i in 0..400u64 {
        // Drop a claim after 0-1.9 ms: sometimes before, sometimes after the
        // statement reached the server.
        let cut = Duration::from_micros((i * 37) % 1_900);
        let _ = tokio::time::timeout(
            cut,
            storage.claim(&ns, &worker, &ClaimPlan::default_queue(8), Duration::from_secs(5)),
        )
        .await;
        let _ = tokio::time::timeout(cut, storage.counts(&ns)).await;
        match tokio::time::timeout(Duration::from_secs(5), storage.counts(&ns)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => errors.push(format!("counts after a dropped call #{i}: {e}")),
            Err(_) => {
                errors.push(format!("counts after a dropped call #{i} (cut {cut:?}) hung for 5 s"));
                break;
            }
        }
        match tokio::time::timeout(Duration::from_secs(5), sqlx::query("SELECT 1").execute(storage.pool()))
            .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => errors.push(format!("pool query after a dropped call #{i}: {e}")),
            Err(_) => {
                errors.push(format!("pool query after a dropped call #{i} (cut {cut:?}) hung for 5 s"));
                break;
            }
        }
    }
    // Rows or gaps locked by a claim transaction dropped mid-flight must be
    // released: a DELETE of the namespace must not wait on them.
    match tokio::time::timeout(Duration::from_secs(10), storage.purge(&ns)).await {
        Ok(r) => {
            r?;
        }
        Err(_) => errors.push("purging the namespace after the dropped calls hung for 10 s".to_owned()),
    }
    println!("{} errors after dropped calls; first: {:?}", errors.len(), errors.first());
    assert!(errors.is_empty(), "{errors:#?}");
    Ok(())
}
