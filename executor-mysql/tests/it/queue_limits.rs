//! Fleet-wide queue limits on MySQL/MariaDB, beyond the
//! conformance suite: a concurrency limit holds exactly under claimers in
//! three storages with pools of their own (three processes, as far as the
//! server can tell); a claimer stopped inside the limited claim holds the
//! queue's row for at most the session bound (2 s) and never holds up
//! other queues; a hand-edited limits row stops only its own queue.

use executor_core::storage::QueueControl;
use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_core::{
    Namespace, QueueName, WorkerId,
    queue::{ClaimPlan, QueueLimits, QueueShare, RateLimit},
    storage::{Finish, NewTask, Storage},
    testing,
};
use reliable_executor_mysql::MySqlStorage;
use sqlx::{Executor, Row};
use tokio::time::Instant;

use crate::support::{self, cleanup, storage};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap_or_else(|e| panic!("queue {name}: {e}"))
}

fn tasks_in(prefix: &str, queue: &str, n: usize) -> Vec<NewTask> {
    (0..n)
        .map(|i| {
            let mut t = testing::new_task(&format!("{prefix}-{i:05}"));
            t.queue = q(queue);
            t
        })
        .collect()
}

async fn submit_all(s: &MySqlStorage, ns: &Namespace, tasks: Vec<NewTask>) -> TestResult {
    for chunk in tasks.chunks(500) {
        for r in s.submit_many(ns, chunk.to_vec()).await? {
            r?;
        }
    }
    Ok(())
}

fn plan(shares: &[(&str, usize)], limit: usize) -> ClaimPlan {
    ClaimPlan::new(shares.iter().map(|(name, n)| QueueShare::new(q(name), *n)).collect(), limit)
}

fn worker(name: &str) -> WorkerId {
    WorkerId::new(name).unwrap_or_else(|e| panic!("worker {name}: {e}"))
}

/// A cheap pseudo-random hold in 2..=20 ms.
fn hold(seed: &mut u64) -> Duration {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    Duration::from_millis(2 + *seed % 19)
}

/// Six claimers (two per storage, three storages on pools of their own)
/// claim from a queue limited to 3 for 4 s, each completing its tasks after
/// a short random hold. The claimers' own bookkeeping counts a task from
/// the claim's return until just before its finish, an interval inside the
/// time the store has it RUNNING, so its maximum is at most the store's:
/// never above 3. It must reach 3, and the store's running count, sampled
/// by `queues()`, never exceeds 3 either.
#[tokio::test(flavor = "multi_thread", worker_threads = 6)]
async fn concurrency_limit_holds_across_three_storages() -> TestResult {
    let _serial = support::serial().await;
    let stores = [storage().await, storage().await, storage().await];
    let ns = testing::unique_namespace("mylim");
    let outcome = three_storages(&stores, &ns).await;
    cleanup(&stores[0], &ns).await;
    outcome
}

async fn three_storages(stores: &[MySqlStorage; 3], ns: &Namespace) -> TestResult {
    stores[0].set_queue_limits(ns, &q("lim"), &QueueLimits::new().concurrency(3)).await?;
    submit_all(&stores[0], ns, tasks_in("lim", "lim", 3_000)).await?;
    let held = Arc::new(AtomicUsize::new(0));
    let max_held = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let store_max = Arc::new(AtomicUsize::new(0));
    let end = Instant::now() + Duration::from_secs(4);
    let mut claimers = Vec::new();
    for (i, s) in stores.iter().enumerate() {
        for j in 0..2 {
            let (s, ns) = (s.clone(), ns.clone());
            let (held, max_held, done) = (Arc::clone(&held), Arc::clone(&max_held), Arc::clone(&done));
            claimers.push(tokio::spawn(async move {
                let me = worker(&format!("w{i}-{j}"));
                let mut seed = 0x9E37_79B9_7F4A_7C15_u64 ^ (i as u64 * 31 + j as u64 + 1);
                while Instant::now() < end {
                    let got = s.claim(&ns, &me, &plan(&[("lim", 2)], 2), Duration::from_secs(30)).await?;
                    if got.is_empty() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    }
                    let now = held.fetch_add(got.len(), Ordering::SeqCst) + got.len();
                    max_held.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(hold(&mut seed)).await;
                    for t in &got {
                        let lease = t.lease().ok_or("a claimed task has a lease")?;
                        held.fetch_sub(1, Ordering::SeqCst);
                        s.finish(&ns, &lease, Finish::Completed).await?;
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                }
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            }));
        }
    }
    let sampler = {
        let (s, ns, store_max) = (stores[1].clone(), ns.clone(), Arc::clone(&store_max));
        tokio::spawn(async move {
            while Instant::now() < end {
                let queues = s.queues(&ns).await?;
                let running = queues.iter().find(|i| i.queue.as_str() == "lim").map_or(0, |i| i.running);
                store_max.fetch_max(usize::try_from(running).unwrap_or(usize::MAX), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        })
    };
    for c in claimers {
        c.await??;
    }
    sampler.await??;
    let (max_held, store_max, done) =
        (max_held.load(Ordering::SeqCst), store_max.load(Ordering::SeqCst), done.load(Ordering::SeqCst));
    eprintln!(
        "limit 3: {done} completed in 4 s, most held at once {max_held}, most RUNNING seen {store_max}"
    );
    assert!(max_held <= 3, "the claimers held {max_held} tasks of a queue limited to 3 at once");
    assert!(store_max <= 3, "queues() showed {store_max} RUNNING in a queue limited to 3");
    assert_eq!(max_held, 3, "the limit was never reached ({done} done)");
    assert!(done > 100, "only {done} tasks completed in 4 s");
    let info = stores[2].queues(ns).await?.into_iter().find(|i| i.queue.as_str() == "lim");
    let info = info.ok_or("lim is listed")?;
    assert_eq!(info.limits.concurrency, Some(3), "{info:?}");
    assert!(info.throttled > 0, "six claimers on a limit of 3 were cut short: {info:?}");
    Ok(())
}

/// The statement a limited claim opens its transaction with (see
/// `limits.rs`): the session's idle bound of 2 s, then the transaction.
const BEGIN: &str =
    "SET @reliable_executor_wait = @@SESSION.wait_timeout, SESSION wait_timeout = 2; START TRANSACTION";

/// A claimer stopped inside the limited claim, simulated by a connection
/// that opens the transaction as the claim does, locks the queue's row and
/// then does nothing: claimers of that queue get nothing but answer at once
/// while it holds the row, claimers of other queues (alone or in the same
/// plan) are never held up, and the server ends the holder's session after
/// the 2 s bound, after which the queue is claimed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_limited_claimer_holds_its_queue_for_the_bound_only() -> TestResult {
    let _serial = support::serial().await;
    let s = storage().await;
    let ns = testing::unique_namespace("mystop");
    let outcome = stopped_holder(&s, &ns).await;
    cleanup(&s, &ns).await;
    outcome
}

async fn stopped_holder(s: &MySqlStorage, ns: &Namespace) -> TestResult {
    s.set_queue_limits(ns, &q("lim"), &QueueLimits::new().concurrency(100)).await?;
    let mut tasks = tasks_in("lim", "lim", 20);
    tasks.extend(tasks_in("free", "free", 40));
    submit_all(s, ns, tasks).await?;

    let holder_pool = support::pool(1).await;
    let mut holder = holder_pool.acquire().await?;
    holder.execute(sqlx::raw_sql(BEGIN)).await?;
    sqlx::query("SELECT queue FROM reliable_executor_queues WHERE ns = ? AND queue = 'lim' FOR UPDATE")
        .bind(ns.as_str())
        .fetch_one(&mut *holder)
        .await?;
    let held_at = Instant::now();
    let me = worker("healthy");
    let lease = Duration::from_secs(30);

    // While held: lim yields nothing, promptly; free alone and free beside
    // lim in one plan are claimed promptly.
    let started = Instant::now();
    let got = s.claim(ns, &me, &plan(&[("lim", 5)], 5), lease).await?;
    let lim_alone = started.elapsed();
    assert!(got.is_empty(), "lim's row is held: {} claimed", got.len());
    assert!(lim_alone < Duration::from_millis(500), "a claim of the held queue took {lim_alone:?}");
    let started = Instant::now();
    let got = s.claim(ns, &me, &plan(&[("free", 5)], 5), lease).await?;
    assert_eq!(got.len(), 5);
    assert!(started.elapsed() < Duration::from_millis(300), "free alone took {:?}", started.elapsed());
    let started = Instant::now();
    let got = s.claim(ns, &me, &plan(&[("lim", 5), ("free", 5)], 10), lease).await?;
    let mixed = started.elapsed();
    assert!(got.iter().all(|t| t.queue.as_str() == "free") && got.len() == 10, "{got:?}");
    assert!(mixed < Duration::from_millis(300), "free beside the held lim took {mixed:?}");
    eprintln!("while held: lim alone answered in {lim_alone:?}, lim + free in {mixed:?}");

    // The server ends the holder's session after 2 s idle; lim is claimed
    // again from then on.
    let mut freed = None;
    while held_at.elapsed() < Duration::from_secs(6) {
        let got = s.claim(ns, &me, &plan(&[("lim", 5)], 5), lease).await?;
        if !got.is_empty() {
            freed = Some(held_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let freed = freed.ok_or("lim was still held 6 s after its holder stopped")?;
    eprintln!("lim claimed again {freed:?} after its holder stopped");
    assert!(freed >= Duration::from_millis(1_900), "lim claimed while its row was held ({freed:?})");
    assert!(freed < Duration::from_millis(3_500), "the bound is 2 s; lim was held {freed:?}");
    let gone = sqlx::query("SELECT 1").fetch_one(&mut *holder).await;
    assert!(gone.is_err(), "the server closed the stopped holder's session");
    holder.close_on_drop();
    drop(holder);
    holder_pool.close().await;
    Ok(())
}

/// A limits row edited by hand into values no `QueueLimits` has: the queue
/// is not claimed (fail closed: the limit may guard something fragile) and
/// its tasks stay waiting, listed by `queues()`; its claimers are not woken
/// by them (no spin); other queues are claimed as usual; nothing panics;
/// setting the limits again repairs it. Garbage in the bucket (a negative,
/// a huge or a future-dated value) is brought into range instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_corrupt_limits_row_stops_only_its_queue() -> TestResult {
    let s = storage().await;
    let ns = testing::unique_namespace("mybadlim");
    let outcome = corrupt_row(&s, &ns).await;
    cleanup(&s, &ns).await;
    outcome
}

async fn corrupt_row(s: &MySqlStorage, ns: &Namespace) -> TestResult {
    let me = worker("w");
    let lease = Duration::from_secs(30);
    s.set_queue_limits(ns, &q("bad"), &QueueLimits::new().concurrency(5)).await?;
    let mut tasks = tasks_in("bad", "bad", 4);
    tasks.extend(tasks_in("good", "good", 4));
    tasks.extend(tasks_in("bucket", "bucket", 10));
    submit_all(s, ns, tasks).await?;
    let pool = s.pool().clone();
    for edit in [
        "UPDATE reliable_executor_queues SET concurrency = 0 WHERE ns = ? AND queue = 'bad'",
        "UPDATE reliable_executor_queues SET concurrency = 4000000000 WHERE ns = ? AND queue = 'bad'",
        "UPDATE reliable_executor_queues SET concurrency = NULL, rate_starts = 5, rate_per_ms = 0, \
         rate_burst = NULL, tokens = -1e300, tokens_at = 9000000000000000000 WHERE ns = ? AND queue = 'bad'",
        "UPDATE reliable_executor_queues SET concurrency = NULL, rate_starts = NULL, rate_per_ms = NULL, \
         rate_burst = 7, throttled = 18446744073709551615 WHERE ns = ? AND queue = 'bad'",
    ] {
        sqlx::query(edit).bind(ns.as_str()).execute(&pool).await?;
        let got = s.claim(ns, &me, &plan(&[("bad", 5), ("good", 1)], 6), lease).await?;
        assert!(got.iter().all(|t| t.queue.as_str() == "good"), "{edit}: {got:?}");
        let info = s.queues(ns).await?;
        let bad = info.iter().find(|i| i.queue.as_str() == "bad").ok_or("bad is listed")?;
        assert_eq!((bad.waiting, bad.running), (4, 0), "{edit}: {bad:?}");
        let started = Instant::now();
        s.wait_for_work(ns, &[q("bad")], Duration::from_millis(300)).await?;
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{edit}: the corrupt queue woke its claimer"
        );
    }
    // The good queue gave one task per round: four rounds, all of it.
    let good: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM reliable_executor_tasks WHERE ns = ? AND queue = 'good' AND state = 'RUNNING'")
            .bind(ns.as_str())
            .fetch_one(&pool)
            .await?
            .try_get("n")?;
    assert_eq!(good, 4);

    // Setting the limits again repairs the row.
    s.set_queue_limits(ns, &q("bad"), &QueueLimits::new().concurrency(2)).await?;
    let got = s.claim(ns, &me, &plan(&[("bad", 5)], 5), lease).await?;
    assert_eq!(got.len(), 2, "repaired: the limit of 2");

    // A valid rate with garbage in the bucket: capped at the burst.
    let rate = RateLimit::new(1, Duration::from_secs(3_600))?.burst(3)?;
    s.set_queue_limits(ns, &q("bucket"), &QueueLimits::new().rate(rate)).await?;
    sqlx::query("UPDATE reliable_executor_queues SET tokens = 1e300 WHERE ns = ? AND queue = 'bucket'")
        .bind(ns.as_str())
        .execute(&pool)
        .await?;
    let got = s.claim(ns, &me, &plan(&[("bucket", 10)], 10), lease).await?;
    assert_eq!(got.len(), 3, "a huge bucket is capped at its burst of 3");
    sqlx::query("UPDATE reliable_executor_queues SET tokens = 2, tokens_at = 9000000000000000000 WHERE ns = ? AND queue = 'bucket'")
        .bind(ns.as_str())
        .execute(&pool)
        .await?;
    let got = s.claim(ns, &me, &plan(&[("bucket", 10)], 10), lease).await?;
    assert_eq!(got.len(), 2, "a future-dated bucket spends what it holds");
    let left: i64 = sqlx::query(
        "SELECT COUNT(*) AS n FROM reliable_executor_tasks WHERE ns = ? AND queue IN ('bad', 'bucket') AND state IN ('CREATED', 'PENDING')",
    )
    .bind(ns.as_str())
    .fetch_one(&pool)
    .await?
    .try_get("n")?;
    assert_eq!(left, 2 + 5, "no task lost: the rest still wait");
    Ok(())
}
