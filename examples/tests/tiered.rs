//! `TieredStorage<RedisStorage, MySqlStorage>` on real servers (`REDIS_URL`,
//! default `redis://127.0.0.1:6379`; `MYSQL_URL`, default
//! `mysql://root@127.0.0.1:3306/test`): the whole conformance suite, a
//! promotion from MySQL to Redis, and a crash between the two steps of a
//! move. Each test has its own namespace and purges it from both stores.

use std::time::Duration;

use executor_core::{
    Namespace, Result, TaskId, TaskState, TieredStorage, WorkerId,
    queue::ClaimPlan,
    storage::{Due, Storage, TierStorage},
    testing,
    testing::PromoteStep,
};
use executor_mysql::MySqlStorage;
use executor_redis::RedisStorage;

type Tiered = TieredStorage<RedisStorage, MySqlStorage>;

async fn connect() -> (RedisStorage, MySqlStorage) {
    let redis_url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let mysql_url =
        std::env::var("MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
    let redis = match RedisStorage::connect(&redis_url).await {
        Ok(s) => s,
        Err(e) => panic!(
            "Redis at {redis_url} does not answer: {e}\nStart one with `redis-server --port 6379 --save '' \
             --appendonly no --daemonize yes`, or point REDIS_URL at a server."
        ),
    };
    let mysql = match tokio::time::timeout(Duration::from_secs(10), MySqlStorage::connect(&mysql_url)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => panic!(
            "MySQL/MariaDB at {mysql_url} does not answer: {e}\nStart it with `source scripts/services.sh \
             && ensure_mariadb`, or point MYSQL_URL at a server."
        ),
        Err(_) => panic!("MySQL/MariaDB at {mysql_url} did not answer within 10 s; is it running?"),
    };
    (redis, mysql)
}

/// Redis hot, MySQL cold, default horizon (5 minutes), a namespace of its own.
async fn fresh() -> (Tiered, Namespace) {
    let (redis, mysql) = connect().await;
    (TieredStorage::new(redis, mysql), testing::unique_namespace("tier-rm"))
}

/// Purges the namespace from both stores.
async fn cleanup(storage: &Tiered, ns: &Namespace) {
    if let Err(e) = storage.hot().purge(ns).await {
        eprintln!("cleanup of {ns} in Redis failed: {e}");
    }
    if let Err(e) = storage.cold().purge(ns).await {
        eprintln!("cleanup of {ns} in MySQL failed: {e}");
    }
}

executor_core::testing::storage_conformance_tests!(fresh, cleanup);

fn task(id: &str, delay: Duration) -> executor_core::storage::NewTask {
    let mut t = testing::new_task(id);
    t.due = Due::After(delay);
    t
}

fn id(s: &str) -> Result<TaskId> {
    TaskId::new(s)
}

/// A short horizon so tasks enter it within the test.
const HORIZON: Duration = Duration::from_secs(2);

/// Tasks beyond the horizon go to MySQL; once within it, promotion moves
/// them to Redis once, and a worker claims each exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promotion_moves_far_tasks_to_redis_once() -> Result<()> {
    let (s, ns) = fresh().await;
    let s = s.horizon(HORIZON);
    let outcome = promotion(&s, &ns).await;
    cleanup(&s, &ns).await;
    outcome
}

async fn promotion(s: &Tiered, ns: &Namespace) -> Result<()> {
    s.submit(ns, task("near", Duration::from_millis(500))).await?;
    for i in 0..5 {
        s.submit(ns, task(&format!("far{i}"), Duration::from_millis(3_000 + i * 100))).await?;
    }
    assert!(s.hot().get(ns, &id("near")?).await?.is_some(), "a task within the horizon is submitted hot");
    assert_eq!(s.cold().counts(ns).await?.get(TaskState::Created), 5, "far tasks are submitted cold");
    assert_eq!(s.promote(ns).await?, 0, "nothing is within the horizon yet");
    assert_eq!(s.get(ns, &id("far0")?).await?.map(|r| r.state), Some(TaskState::Created), "one view");

    let mut moved = 0;
    let give_up = tokio::time::Instant::now() + Duration::from_secs(10);
    while moved < 5 && tokio::time::Instant::now() < give_up {
        moved += s.promote(ns).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(moved, 5);
    assert_eq!(s.cold().counts(ns).await?.total(), 0, "nothing left in MySQL");
    assert_eq!(s.hot().counts(ns).await?.get(TaskState::Created), 6);
    assert_eq!(s.promote(ns).await?, 0, "a second pass moves nothing");

    let w = WorkerId::generate();
    let mut claimed = Vec::new();
    let give_up = tokio::time::Instant::now() + Duration::from_secs(10);
    while claimed.len() < 6 && tokio::time::Instant::now() < give_up {
        claimed.extend(
            s.claim(ns, &w, &ClaimPlan::default_queue(10), Duration::from_secs(30))
                .await?
                .into_iter()
                .map(|r| r.id),
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed.len(), 6, "each task claimed exactly once");
    Ok(())
}

/// A promoter that dies between the insert into Redis and the delete from
/// MySQL leaves the task in both; the next run finishes the move and the
/// task runs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_insert_and_delete_neither_loses_nor_duplicates() -> Result<()> {
    let (s, ns) = fresh().await;
    let s = s.horizon(HORIZON);
    let outcome = crash(&s, &ns).await;
    cleanup(&s, &ns).await;
    outcome
}

async fn crash(s: &Tiered, ns: &Namespace) -> Result<()> {
    let fragile = id("fragile")?;
    s.submit(ns, task("fragile", Duration::from_millis(2_500))).await?;
    assert!(s.cold().get(ns, &fragile).await?.is_some(), "submitted cold");
    testing::wait_for(Duration::from_secs(10), "fragile within the horizon", || async {
        let now = s.cold().now(ns).await.ok()?;
        let due = s.cold().due_before(ns, now.saturating_add(HORIZON), 10).await.ok()?;
        (!due.is_empty()).then_some(())
    })
    .await;

    s.crash_after(PromoteStep::Inserted);
    let crashed = s.promote(ns).await;
    assert!(crashed.is_err(), "the injected crash stops the promoter: {crashed:?}");
    let hot = s.hot().get(ns, &fragile).await?;
    let cold = s.cold().get(ns, &fragile).await?;
    assert!(hot.is_some() && cold.is_some(), "after the crash both stores hold it");
    assert_eq!(s.counts(ns).await?.get(TaskState::Created), 2, "until the move ends, counts see both copies");
    assert_eq!(s.get(ns, &fragile).await?.map(|r| r.fence), hot.map(|r| r.fence), "the hot copy is live");

    assert_eq!(s.promote(ns).await?, 1, "the next run repeats the insert (a no-op) and deletes");
    assert!(s.cold().get(ns, &fragile).await?.is_none(), "the cold copy is gone");
    assert_eq!(s.hot().counts(ns).await?.get(TaskState::Created), 1, "one copy in Redis");

    let w = WorkerId::generate();
    let first = testing::wait_for(Duration::from_secs(10), "fragile due", || async {
        let got = s.claim(ns, &w, &ClaimPlan::default_queue(10), Duration::from_secs(30)).await.ok()?;
        (!got.is_empty()).then_some(got)
    })
    .await;
    assert_eq!(first.len(), 1, "exactly one copy is claimed");
    assert_eq!(
        s.claim(ns, &w, &ClaimPlan::default_queue(10), Duration::from_secs(30)).await?.len(),
        0,
        "no second copy"
    );
    Ok(())
}

/// A task promoted from MySQL to Redis ends an idle claimer's 60 s wait
/// when it falls due.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_promoted_task_wakes_an_idle_claimer() {
    let (redis, mysql) = connect().await;
    let tiered = TieredStorage::new(redis, mysql).horizon(Duration::from_secs(1));
    let ns = testing::unique_namespace("tier-wake");
    testing::tiered_promotion_wakes_claimers(&tiered, &ns).await;
    cleanup(&tiered, &ns).await;
}
