//! Fleet-wide queue limits in Redis, beyond the conformance
//! checks: three executors on one namespace hold a concurrency limit and
//! reach it; the plain path writes no limit keys; the leader's tidy corrects
//! a running set; limit state edited by hand to garbage neither panics nor
//! loses tasks nor holds up other queues (docs/redis.md, Queues and
//! priorities: a queue whose limits do not parse is held, an unreadable
//! bucket reads as empty, a limits key of another type reads as no limits).

use executor_core::storage::QueueControl;
use std::{
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use executor_core::{
    Executor, Handler, QueueName, TaskBuilder, TaskContext, TaskOptions, TaskRecord, TaskState, WorkerId,
    queue::{ClaimPlan, QueueLimits, RateLimit},
    storage::{NewTask, Storage},
    testing,
};
use fred::interfaces::{HashesInterface, KeysInterface, SortedSetsInterface};

use crate::common::{
    self,
    corrupt::{Damage, TestResult},
};

const LEASE: Duration = Duration::from_secs(60);

type Spans = Arc<Mutex<Vec<(Instant, Instant)>>>;

fn task(id: &str, queue: &str) -> TestResult<NewTask> {
    let mut t = testing::new_task(id);
    t.queue = QueueName::new(queue)?;
    Ok(t)
}

async fn submit_all(d: &Damage, tasks: Vec<NewTask>) -> TestResult {
    for r in d.storage.submit_many(&d.ns, tasks).await? {
        r?;
    }
    Ok(())
}

async fn claim(d: &Damage, queues: &[&str], limit: usize) -> TestResult<Vec<TaskRecord>> {
    let shares = queues.iter().map(|q| Ok((QueueName::new(*q)?, limit))).collect::<TestResult<Vec<_>>>()?;
    let plan = ClaimPlan::new(
        shares.into_iter().map(|(q, n)| executor_core::queue::QueueShare::new(q, n)).collect(),
        limit,
    );
    Ok(d.storage.claim(&d.ns, &WorkerId::generate(), &plan, LEASE).await?)
}

fn count(tasks: &[TaskRecord], queue: &str) -> usize {
    tasks.iter().filter(|t| t.queue.as_str() == queue).count()
}

fn sleeper(queue: &QueueName, spans: &Spans) -> Handler {
    let spans = Arc::clone(spans);
    Handler::new("slow", move |_: u32, _ctx: TaskContext| {
        let spans = Arc::clone(&spans);
        async move {
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(200)).await;
            spans.lock().unwrap_or_else(PoisonError::into_inner).push((start, Instant::now()));
        }
    })
    .options(TaskOptions::new().queue(queue.clone()))
}

/// Three executors, each with its own connections and room for 8 tasks,
/// share a queue limited to 3: the handlers' own spans never overlap more
/// than 3 deep, and do reach 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_executors_hold_a_concurrency_limit_of_three() -> TestResult {
    let _serial = common::serial().await;
    let ns = testing::unique_namespace("limits-3x");
    let queue = QueueName::new("reports")?;
    let spans = Spans::default();
    let mut running = Vec::new();
    let mut stores = Vec::new();
    for _ in 0..3 {
        let storage = common::connect().await;
        stores.push(storage.clone());
        let executor = Executor::builder(storage)
            .namespace(ns.as_str())
            .concurrency(8)
            .handler(sleeper(&queue, &spans))
            .build()
            .await?;
        if running.is_empty() {
            executor.client().set_queue_limits("reports", QueueLimits::new().concurrency(3)).await?;
        }
        running.push(executor);
    }
    let client = running[0].client().clone();
    for i in 0..15u32 {
        TaskBuilder::new("slow", i, TaskOptions::new().queue(queue.clone())).submit(&client).await?;
    }
    let running: Vec<_> = running.iter().map(Executor::start).collect();
    let started = Instant::now();
    while spans.lock().unwrap_or_else(PoisonError::into_inner).len() < 15 {
        assert!(started.elapsed() < Duration::from_secs(30), "15 tasks of 200 ms did not finish in 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = started.elapsed();
    for r in running {
        r.shutdown().await?;
    }
    let spans = spans.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let most = executor_core::testing::max_overlap(&spans);
    assert_eq!(most, 3, "at most 3 at once, and 3 reached: {most}");
    // 15 tasks 3 at a time are 5 rounds of 200 ms.
    assert!(took >= Duration::from_millis(1_000), "15 tasks in {took:?}: faster than 3 at a time");
    let info = stores[0].queues(&ns).await?;
    let reports = info.iter().find(|q| q.queue == queue);
    assert_eq!(reports.map(|q| (q.running, q.limits.concurrency)), Some((0, Some(3))), "{info:?}");
    assert!(reports.is_some_and(|q| q.throttled > 0), "claims were cut short: {info:?}");
    common::cleanup(&stores[0], &ns).await;
    Ok(())
}

/// With no limits anywhere the claim and finish scripts write no limit key.
#[tokio::test]
async fn the_plain_path_writes_no_limit_keys() -> TestResult {
    let d = Damage::new("limits-plain").await;
    submit_all(&d, vec![testing::new_task("a"), task("b", "mail")?]).await?;
    let got = claim(&d, &["default", "mail"], 5).await?;
    assert_eq!(got.len(), 2);
    for t in &got {
        let lease = t.lease().ok_or("a claimed task has a lease")?;
        d.storage.finish(&d.ns, &lease, executor_core::storage::Finish::Completed).await?;
    }
    for key in ["limits", "bucket", "throttled", "run:default", "run:mail"] {
        let n: i64 = d.redis.exists(d.key(key)).await?;
        assert_eq!(n, 0, "{key} was written");
    }
    d.cleanup().await;
    Ok(())
}

/// Tasks running when a limit is set count against it; the leader's tidy
/// takes out a member whose task is no longer running and puts back a
/// running task the set lost.
#[tokio::test]
async fn running_sets_start_from_the_leases_and_are_tidied() -> TestResult {
    let d = Damage::new("limits-tidy").await;
    submit_all(&d, (0..6).map(|i| task(&format!("m-{i}"), "mail")).collect::<TestResult<_>>()?).await?;
    let first = claim(&d, &["mail"], 2).await?;
    assert_eq!(first.len(), 2);
    d.storage.set_queue_limits(&d.ns, &QueueName::new("mail")?, &QueueLimits::new().concurrency(3)).await?;
    assert_eq!(claim(&d, &["mail"], 5).await?.len(), 1, "two already run: one slot left");
    let run = d.key("run:mail");
    let n: i64 = d.redis.zcard(&run).await?;
    assert_eq!(n, 3);

    // A member lost and a stranger added by hand: the set is wrong both ways.
    let _: i64 = d.redis.zrem(&run, d.task_key(first[0].id.as_str())).await?;
    let _: i64 = d.redis.zadd(&run, None, None, false, false, (1.0, d.task_key("m-5"))).await?;
    d.storage.housekeeping(&d.ns).await?;
    let mut members: Vec<String> = d.redis.zrange(&run, 0, -1, None, false, None, false).await?;
    members.sort();
    let mut running: Vec<String> = d
        .storage
        .list(&d.ns, executor_core::ListQuery::new(TaskState::Running, 100))
        .await?
        .tasks
        .iter()
        .map(|t| d.task_key(t.id.as_str()))
        .collect();
    running.sort();
    assert_eq!(members, running, "the running set is the running tasks again");
    d.cleanup().await;
    Ok(())
}

/// Limit state edited by hand to garbage: no claim fails, no task is lost,
/// other queues run; a queue with limits that do not parse is held until
/// set_queue_limits writes them again; a bucket that does not parse reads
/// as empty and refills; a running set of another type holds its queue
/// until the leader's tidy deletes it; a limits key of another type reads
/// as no limits, and set_queue_limits says to delete it.
#[tokio::test]
async fn garbage_limit_state_harms_no_neighbour() -> TestResult {
    let d = Damage::new("limits-bad").await;
    let mut tasks = (0..6).map(|i| task(&format!("lim-{i}"), "lim")).collect::<TestResult<Vec<_>>>()?;
    tasks.extend((0..20).map(|i| task(&format!("free-{i}"), "free")).collect::<TestResult<Vec<_>>>()?);
    submit_all(&d, tasks).await?;
    let lim = QueueName::new("lim")?;
    d.storage.set_queue_limits(&d.ns, &lim, &QueueLimits::new().concurrency(2)).await?;

    // 1. The limits field of lim is garbage: lim is held, free is not.
    let _: i64 = d.redis.hset(d.key("limits"), ("lim", "lots")).await?;
    let got = claim(&d, &["lim", "free"], 4).await?;
    assert_eq!((count(&got, "lim"), count(&got, "free")), (0, 4), "lim held, free served");
    let waiting = d.storage.queues(&d.ns).await?;
    let lim_info = waiting.iter().find(|q| q.queue == lim).ok_or("lim is listed")?;
    assert_eq!(lim_info.waiting, 6, "no task of lim lost: {lim_info:?}");
    d.storage.set_queue_limits(&d.ns, &lim, &QueueLimits::new().concurrency(2)).await?;
    assert_eq!(count(&claim(&d, &["lim"], 4).await?, "lim"), 2, "rewritten: lim runs again, 2 at once");

    // 2. Its running set is a string: lim held, free served; tidy repairs.
    let _: i64 = d.redis.del(d.key("run:lim")).await?;
    let _: () = d.redis.set(d.key("run:lim"), "x", None, None, false).await?;
    let got = claim(&d, &["lim", "free"], 4).await?;
    assert_eq!((count(&got, "lim"), count(&got, "free")), (0, 4));
    d.storage.housekeeping(&d.ns).await?;
    let n: i64 = d.redis.zcard(d.key("run:lim")).await?;
    assert_eq!(n, 2, "tidy rebuilt the running set from the leases");
    assert!(claim(&d, &["lim"], 4).await?.is_empty(), "and the limit of 2 holds again");

    // 3. A rate bucket that does not parse reads as empty, then refills.
    let rate = RateLimit::new(20, Duration::from_secs(1))?;
    d.storage.set_queue_limits(&d.ns, &lim, &QueueLimits::new().rate(rate)).await?;
    let _: i64 = d.redis.hset(d.key("bucket"), ("lim", "-5:abc")).await?;
    let got = claim(&d, &["lim", "free"], 4).await?;
    assert_eq!((count(&got, "lim"), count(&got, "free")), (0, 4), "an empty bucket, free served");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let got = claim(&d, &["lim"], 4).await?;
    assert!((1..=4).contains(&got.len()), "tokens earned since: {}", got.len());

    // 4. The limits hash is a string: every queue reads as unlimited; a
    //    set_queue_limits is refused with what to do, nothing changed.
    let _: i64 = d.redis.del(d.key("limits")).await?;
    let _: () = d.redis.set(d.key("limits"), "garbage", None, None, false).await?;
    let got = claim(&d, &["lim", "free"], 10).await?;
    assert!(count(&got, "free") > 0, "free served: {got:?}");
    let refused = d.storage.set_queue_limits(&d.ns, &lim, &QueueLimits::new().concurrency(1)).await;
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("delete that key"), "refused, saying what to do: {message}");
    let _: i64 = d.redis.del(d.key("limits")).await?;

    // Nothing was lost: every task is waiting, running or done.
    let counts = d.storage.counts(&d.ns).await?;
    let total: u64 = [TaskState::Pending, TaskState::Created, TaskState::Running, TaskState::Completed]
        .iter()
        .map(|s| counts.get(*s))
        .sum();
    assert_eq!(total, 26, "{counts:?}");
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}
