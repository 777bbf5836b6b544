//! `AnyStorage` keeps the storage contract whatever it holds: the whole
//! conformance suite, the cron schedule and the queue checks through `memory:`, and a
//! round trip through each server URL; unknown schemes and dead servers get
//! one clear error.

use executor_core::storage::QueueControl;
use std::time::Duration;

use executor_core::{
    Error, Namespace, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Storage},
    testing,
};
use reliable_executor_any::AnyStorage;

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
    executor_core::testing::storage_conformance_tests!(fresh, cleanup);
    executor_core::testing::schedule_conformance_tests!(fresh, cleanup);
    executor_core::testing::history_conformance_tests!(fresh, cleanup);
    executor_core::testing::attempt_log_conformance_tests!(fresh, cleanup);
    executor_core::testing::run_now_conformance_tests!(fresh, cleanup);
    executor_core::testing::queue_conformance_tests!(fresh, cleanup);
    executor_core::testing::queue_limit_conformance_tests!(fresh, cleanup);
}

fn env_or(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

/// Submit, claim, retry, claim, complete, read (with its attempt log) and
/// delete one task through `url`.
async fn round_trip(url: &str, kind: &str) -> Result<(), Error> {
    let storage = AnyStorage::connect(url).await.map_err(|e| {
        Error::invalid("test", format!("{url} did not connect ({e}); start it with scripts/test.sh"))
    })?;
    assert_eq!(storage.kind(), kind);
    let ns = testing::unique_namespace("any-rt");
    let id = storage.submit(&ns, testing::new_task("rt-1")).await?.id;
    let claimed = storage
        .claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::from_secs(30))
        .await?;
    let lease = claimed.first().and_then(|r| r.lease()).ok_or(Error::invalid("test", "nothing claimed"))?;
    let retry = Finish::Retry { delay: Duration::ZERO, error: "once more".into() };
    assert_eq!(storage.finish(&ns, &lease, retry).await?, TaskState::Pending);
    let claimed = storage
        .claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::from_secs(30))
        .await?;
    let lease = claimed.first().and_then(|r| r.lease()).ok_or(Error::invalid("test", "nothing claimed"))?;
    assert_eq!(storage.finish(&ns, &lease, Finish::Completed).await?, TaskState::Completed);
    let record = storage.get(&ns, &id).await?.ok_or(Error::invalid("test", "the task vanished"))?;
    assert_eq!(record.state, TaskState::Completed);
    let logged: Vec<_> = record.attempt_log.iter().map(|a| (a.attempt, a.error.as_deref())).collect();
    assert_eq!(logged, [(1, Some("once more"))], "the retried attempt, read back through AnyStorage");
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
async fn postgres_and_postgresql_urls() -> Result<(), Error> {
    let url = env_or("POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test");
    round_trip(&url, "postgres").await?;
    let long = url.replacen("postgres://", "postgresql://", 1);
    round_trip(&long, "postgres").await
}

#[tokio::test]
async fn an_unknown_scheme_names_the_known_ones_and_hides_the_password() {
    let e = AnyStorage::connect("postgresx://app:hunter2@db/app").await.err().map(|e| e.to_string());
    let e = e.unwrap_or_default();
    assert!(
        e.contains("redis://")
            && e.contains("mysql://")
            && e.contains("postgres://")
            && e.contains("memory:"),
        "{e}"
    );
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

/// How long the fleet-wide rate limit is measured for (60 s, as the limit's tests ask).
const RATE_RUN: Duration = Duration::from_secs(60);

/// A rate limit of 20 starts a second (bucket of 10) on one queue, claimed
/// for [`RATE_RUN`] by three claimers with connections of their own (three
/// processes, as far as the server can tell), on Redis, MariaDB and
/// PostgreSQL at once
/// (and on the in-process memory store, one store shared by the three):
/// the starts over the run are the bucket plus 20 a second, ± 5 %, and no
/// window of 1, 5 or 20 s holds more than the bucket plus the window's
/// refill. Each claimer asks for up to 8 tasks, then finishes them and
/// pauses a few milliseconds, so the claims of the three interleave.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rate_limit_holds_for_a_minute_across_three_claimers() -> Result<(), Error> {
    let redis = env_or("REDIS_URL", "redis://127.0.0.1:6379");
    let mysql = env_or("MYSQL_URL", "mysql://root@127.0.0.1:3306/test");
    let postgres = env_or("POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test");
    let runs = ["memory:".to_owned(), redis, mysql, postgres].map(|url| tokio::spawn(rate_run(url)));
    for run in runs {
        run.await.map_err(|e| Error::invalid("test", e.to_string()))??;
    }
    Ok(())
}

async fn rate_run(url: String) -> Result<(), Error> {
    const RATE: u32 = 20;
    const BURST: u32 = 10;
    let connect = |url: String| async move {
        AnyStorage::connect(&url).await.map_err(|e| {
            Error::invalid("test", format!("{url} did not connect ({e}); start it with scripts/test.sh"))
        })
    };
    let first = connect(url.clone()).await?;
    // memory: is one store per connect; its three claimers share it.
    let stores = if first.kind() == "memory" {
        vec![first.clone(), first.clone(), first]
    } else {
        vec![first, connect(url.clone()).await?, connect(url.clone()).await?]
    };
    let ns = testing::unique_namespace("any-rate");
    let queue = executor_core::QueueName::new("rated")?;
    let limits = executor_core::queue::QueueLimits::new()
        .rate(executor_core::queue::RateLimit::per_second(RATE)?.burst(BURST)?);
    stores[0].set_queue_limits(&ns, &queue, &limits).await?;
    let total = usize::try_from(RATE).unwrap_or(0) * usize::try_from(RATE_RUN.as_secs()).unwrap_or(0) * 2;
    let tasks: Vec<_> = (0..total)
        .map(|i| {
            let mut t = testing::new_task(&format!("r{i:05}"));
            t.queue = queue.clone();
            t
        })
        .collect();
    for chunk in tasks.chunks(500) {
        for r in stores[0].submit_many(&ns, chunk.to_vec()).await? {
            r?;
        }
    }
    let start = tokio::time::Instant::now();
    let end = start + RATE_RUN;
    let mut claimers = Vec::new();
    for (c, s) in stores.iter().cloned().enumerate() {
        let (ns, queue) = (ns.clone(), queue.clone());
        claimers.push(tokio::spawn(async move {
            let me = WorkerId::new(format!("rate-{c}"))?;
            let plan = executor_core::queue::ClaimPlan::single(queue, 8);
            let mut starts = Vec::new();
            let mut jitter = 7 + c as u64;
            while tokio::time::Instant::now() < end {
                let sent = start.elapsed();
                let got = s.claim(&ns, &me, &plan, Duration::from_secs(60)).await?;
                let at = start.elapsed();
                let items: Vec<_> =
                    got.iter().filter_map(|t| t.lease()).map(|l| (l, Finish::Completed)).collect();
                // The store granted these between `sent` and `at`.
                starts.extend(std::iter::repeat_n((sent, at), items.len()));
                for r in s.finish_many(&ns, items).await? {
                    r?;
                }
                jitter = (jitter * 1_103_515_245 + 12_345) % 2_147_483_648;
                tokio::time::sleep(Duration::from_millis(2 + jitter % 15)).await;
            }
            Ok::<_, Error>(starts)
        }));
    }
    let mut starts = Vec::new();
    for c in claimers {
        starts.extend(c.await.map_err(|e| Error::invalid("test", e.to_string()))??);
    }
    let kind = stores[0].kind();
    stores[0].purge(&ns).await?;
    // Starts recorded past the end (a claim in flight when the run ended)
    // are kept: the store granted them within the run plus a round trip.
    let secs =
        starts.iter().map(|(_, at)| *at).max().unwrap_or_default().as_secs_f64().max(RATE_RUN.as_secs_f64());
    let expected = f64::from(BURST) + f64::from(RATE) * secs;
    let got = starts.len() as f64;
    assert!(
        (got - expected).abs() <= 0.05 * expected,
        "{kind}: {got} starts in {secs:.1} s at {RATE}/s after a bucket of {BURST}: expected {expected:.0} ± 5 %"
    );
    starts.sort();
    println!("{kind}: {got} starts in {secs:.1} s (expected {expected:.0})");
    for window in [1.0, 5.0, 20.0] {
        let allowed = f64::from(BURST) + f64::from(RATE) * window;
        let w = Duration::from_secs_f64(window);
        // Starts certainly granted within `w` of a claim's send: sent at or
        // after it, answered by its send plus `w`. A reply delayed by a
        // loaded machine then never makes grants look closer than they were.
        let most = starts
            .iter()
            .map(|(t0, _)| starts.iter().filter(|(sent, at)| sent >= t0 && *at <= *t0 + w).count())
            .max()
            .unwrap_or(0);
        println!("{kind}: at most {most} starts within {window} s (bucket + refill: {allowed:.0})");
        // Two starts of slack for the clocks of the store and this process.
        assert!(
            most as f64 <= allowed + 2.0,
            "{kind}: {most} starts within {window} s, more than the bucket ({BURST}) plus {RATE}/s"
        );
    }
    Ok(())
}
