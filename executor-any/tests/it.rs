//! `AnyStorage` keeps the storage contract whatever it holds: the whole
//! conformance suite, the cron schedule and the queue checks through `memory:`, and a
//! round trip through each server URL; unknown schemes and dead servers get
//! one clear error.

use std::time::Duration;

use executor_any::AnyStorage;
use executor_core::{
    Error, Namespace, TaskState, WorkerId,
    storage::{Finish, Storage},
    testing,
};

async fn fresh() -> (AnyStorage, Namespace) {
    match AnyStorage::connect("memory:").await {
        Ok(s) => (s, testing::unique_namespace("any")),
        Err(e) => panic!("memory: must always connect: {e}"),
    }
}

async fn cleanup(storage: &AnyStorage, ns: &Namespace) {
    if let Err(e) = storage.purge(ns).await {
        eprintln!("cleanup of {ns} failed: {e}");
    }
}

mod conformance {
    use super::{cleanup, fresh};
    executor_core::storage_conformance_tests!(fresh, cleanup);
    executor_core::schedule_conformance_tests!(fresh, cleanup);
    executor_core::queue_conformance_tests!(fresh, cleanup);
    executor_core::queue_limit_conformance_tests!(fresh, cleanup);
}

fn env_or(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

/// Submit, claim, complete, read and delete one task through `url`.
async fn round_trip(url: &str, kind: &str) -> Result<(), Error> {
    let storage = AnyStorage::connect(url).await.map_err(|e| {
        Error::invalid("test", format!("{url} did not connect ({e}); start it with scripts/test.sh"))
    })?;
    assert_eq!(storage.kind(), kind);
    let ns = testing::unique_namespace("any-rt");
    let id = storage.submit(&ns, testing::new_task("rt-1")).await?.id;
    let claimed = storage.claim(&ns, &WorkerId::generate(), 1, Duration::from_secs(30)).await?;
    let lease = claimed.first().and_then(|r| r.lease()).ok_or(Error::invalid("test", "nothing claimed"))?;
    assert_eq!(storage.finish(&ns, &lease, Finish::Completed).await?, TaskState::Completed);
    assert_eq!(storage.get(&ns, &id).await?.map(|r| r.state), Some(TaskState::Completed));
    assert!(storage.delete(&ns, &id).await?, "the task is deleted");
    assert_eq!(storage.counts(&ns).await?.total(), 0);
    // The wake-up marker and the worker's bookkeeping go too: the shared
    // servers keep nothing of a test.
    storage.purge(&ns).await?;
    Ok(())
}

#[tokio::test]
async fn redis_url() -> Result<(), Error> {
    round_trip(&env_or("REDIS_URL", "redis://127.0.0.1:6379"), "redis").await
}

#[tokio::test]
async fn mysql_and_mariadb_urls() -> Result<(), Error> {
    let url = env_or("MYSQL_URL", "mysql://root@127.0.0.1:3306/test");
    round_trip(&url, "mysql").await?;
    let mariadb = url.replacen("mysql", "mariadb", 1);
    round_trip(&mariadb, "mysql").await
}

#[tokio::test]
async fn an_unknown_scheme_names_the_known_ones_and_hides_the_password() {
    let e = AnyStorage::connect("postgresx://app:hunter2@db/app").await.err().map(|e| e.to_string());
    let e = e.unwrap_or_default();
    assert!(e.contains("redis://") && e.contains("mysql://") && e.contains("memory:"), "{e}");
    assert!(!e.contains("hunter2"), "the password leaked: {e}");
    let empty = AnyStorage::connect("").await;
    assert!(matches!(empty, Err(Error::Invalid { .. })), "{empty:?}");
}

#[tokio::test]
async fn a_server_that_is_down_is_one_clear_error() {
    // Port 1 on loopback: nothing listens there.
    let down =
        tokio::time::timeout(Duration::from_secs(30), AnyStorage::connect("redis://127.0.0.1:1")).await;
    match down {
        Ok(Err(e)) => assert!(!e.to_string().is_empty()),
        Ok(Ok(s)) => panic!("connected to nothing: {s:?}"),
        Err(_) => panic!("connecting to a closed port hung for 30 s"),
    }
}
