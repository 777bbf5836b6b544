//! Storage calls dropped at every await point (an executor stopping drops
//! its claim or wait mid-statement) must leave no connection out of step
//! with the server: every later call answers correctly and without a
//! protocol error. Pins the fix for the desynchronised connection of
//! docs/reliability.md ("PrepareOk expected 12 bytes but got 7 bytes").

use std::{
    future::Future,
    pin::pin,
    task::Poll,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use executor_core::{
    Namespace, QueueName, SubmitOutcome, TaskId, WorkerId,
    queue::ClaimPlan,
    storage::{Due, Finish, Storage},
    testing,
};
use reliable_executor_mysql::MySqlStorage;
use tokio::time::{Instant, sleep, timeout};

use crate::support::{cleanup, fresh};

/// How long the random phase runs.
const RANDOM_PHASE: Duration = Duration::from_secs(15);
/// Longer than the free list's freshness window (250 ms), so the next call
/// pings the kept connection before using it.
const STALE: Duration = Duration::from_millis(300);

/// Polls `fut` until it has returned `Pending` `pendings + 1` times, then
/// drops it: the request it just wrote is on the wire, its reply unread.
async fn drop_after<F: Future>(fut: F, pendings: u32) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut left = pendings;
    std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
        Poll::Ready(v) => Poll::Ready(Some(v)),
        Poll::Pending if left == 0 => Poll::Ready(None),
        Poll::Pending => {
            left -= 1;
            Poll::Pending
        }
    })
    .await
}

/// xorshift64: enough randomness for choosing drop points, no dependency.
struct Rng(u64);

impl Rng {
    fn new() -> Self {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
        Self(seed | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One storage call, chosen by `which`, whose outcome nobody looks at.
async fn some_call(s: &MySqlStorage, ns: &Namespace, which: u64, n: u64) {
    let worker = WorkerId::new("cancelled-calls").unwrap_or_else(|e| panic!("worker id: {e}"));
    match which {
        0 => {
            let _ = s.claim(ns, &worker, &ClaimPlan::default_queue(4), Duration::from_secs(60)).await;
        }
        1 => {
            if let Ok(claimed) =
                s.claim(ns, &worker, &ClaimPlan::default_queue(2), Duration::from_secs(60)).await
            {
                for t in claimed {
                    if let Some(lease) = t.lease() {
                        let _ = s.finish(ns, &lease, Finish::Completed).await;
                    }
                }
            }
        }
        2 => {
            let _ = s.wait_for_work(ns, &[QueueName::default()], Duration::from_millis(20)).await;
        }
        3 => {
            let _ = s.submit(ns, testing::new_task(&format!("c{n}"))).await;
        }
        4 => {
            let _ = s.counts(ns).await;
        }
        5 => {
            let _ = s.housekeeping(ns).await;
        }
        _ => {
            let _ = s.get(ns, &TaskId::new("sentinel").unwrap_or_else(|e| panic!("id: {e}"))).await;
        }
    }
}

/// Calls that must all work and answer what the store holds. Returns what
/// went wrong, if anything.
async fn check(s: &MySqlStorage, ns: &Namespace, n: u64) -> Result<(), String> {
    let sentinel = TaskId::new("sentinel").map_err(|e| e.to_string())?;
    let step = async {
        match s.get(ns, &sentinel).await {
            Ok(Some(r)) if r.id == sentinel && r.name == "sentinel" => {}
            other => return Err(format!("get(sentinel) answered {other:?}")),
        }
        let id = format!("v{n}");
        match s.submit(ns, testing::new_task(&id)).await {
            Ok(sub) if sub.outcome == SubmitOutcome::Created => {}
            other => return Err(format!("submit({id}) answered {other:?}")),
        }
        match s.get(ns, &TaskId::new(id.clone()).map_err(|e| e.to_string())?).await {
            Ok(Some(r)) if r.id.as_str() == id => {}
            other => return Err(format!("get({id}) answered {other:?}")),
        }
        s.counts(ns).await.map_err(|e| format!("counts: {e}"))?;
        let worker = WorkerId::new("checker").map_err(|e| e.to_string())?;
        let claimed = s
            .claim(ns, &worker, &ClaimPlan::default_queue(8), Duration::from_secs(60))
            .await
            .map_err(|e| format!("claim: {e}"))?;
        for t in claimed {
            if let Some(lease) = t.lease() {
                s.finish(ns, &lease, Finish::Completed).await.map_err(|e| format!("finish: {e}"))?;
            }
        }
        Ok(())
    };
    timeout(Duration::from_secs(10), step).await.map_err(|_| "check hung for 10 s".to_owned())?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_dropped_mid_statement_leave_the_storage_working() {
    let (s, ns) = fresh().await;
    let mut sentinel = testing::new_task("sentinel");
    sentinel.name = "sentinel".to_owned();
    sentinel.due = Due::After(Duration::from_secs(24 * 3600));
    s.submit(&ns, sentinel).await.unwrap_or_else(|e| panic!("submit sentinel: {e}"));

    let mut rng = Rng::new();
    let mut failures = Vec::new();
    let (mut dropped, mut rounds) = (0u64, 0u64);

    // Phase 1: a call dropped while the free list pings a stale connection.
    for n in 0..15 {
        sleep(STALE).await;
        if drop_after(some_call(&s, &ns, 6, n), 0).await.is_none() {
            dropped += 1;
        }
        rounds += 1;
        if let Err(e) = check(&s, &ns, n).await {
            failures.push(format!("after a dropped get on a stale connection: {e}"));
        }
    }

    // Phase 2: random calls dropped at random await points, now and then
    // on stale connections.
    let start = Instant::now();
    let mut n = 1_000;
    while start.elapsed() < RANDOM_PHASE && failures.len() < 10 {
        n += 1;
        if rng.below(6) == 0 {
            sleep(STALE).await;
        }
        let which = rng.below(7);
        if drop_after(some_call(&s, &ns, which, n), rng.below(6) as u32).await.is_none() {
            dropped += 1;
        }
        rounds += 1;
        if rng.below(3) == 0
            && let Err(e) = check(&s, &ns, n).await
        {
            failures.push(format!("after dropping call {which}: {e}"));
        }
    }
    if let Err(e) = check(&s, &ns, n + 1).await {
        failures.push(format!("final check: {e}"));
    }
    eprintln!("{rounds} rounds, {dropped} calls dropped mid-flight, {} failures", failures.len());
    cleanup(&s, &ns).await;
    assert!(failures.is_empty(), "the storage broke after dropped calls:\n{}", failures.join("\n"));
}
