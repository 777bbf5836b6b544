//! Checks that whatever holds work back also lets it go at once: a wait
//! for work (with a 60 s limit, so a missing wake-up cannot hide behind a
//! short poll) ends within a few seconds of a freed concurrency slot, a
//! raised or removed limit, a refilled rate bucket, a resumed queue, a run
//! now, a requeue, an ended retry backoff or debounce window.

use std::{
    future::Future,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

use crate::{
    Executor, Handler, Namespace, QueueName, TaskBuilder, TaskContext, TaskOptions, TaskRecord, TaskState,
    queue::{QueueLimits, RateLimit},
    storage::{Debounce, Due, Finish, NewTask, QueueControl, RunNow, Storage, SubmitMode},
};

use super::{
    new_task,
    support::{LONG_LEASE, lease, ok, submit, task_in_state, worker},
};

/// What a wait may take to end after a release: far below the 60 s the
/// wait is given, and above what the slowest store's fallback needs (a
/// MySQL claimer in another process polls every 250 ms at most).
const WOKEN_WITHIN: Duration = Duration::from_secs(5);

/// How long a wait must hold before the release, so that a wait that
/// ends at once (a stale wake-up) is not mistaken for the release's.
const QUIET: Duration = Duration::from_millis(300);

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap_or_else(|e| panic!("queue name {name:?}: {e}"))
}

fn in_queue(id: &str, queue: &str) -> NewTask {
    let mut t = new_task(id);
    t.queue = q(queue);
    t
}

fn one(queue: &str) -> crate::queue::ClaimPlan {
    crate::queue::ClaimPlan::single(q(queue), 1)
}

async fn claim_one<S: Storage>(s: &S, ns: &Namespace, queue: &str, lease: Duration) -> Option<TaskRecord> {
    ok("claim", s.claim(ns, &worker(), &one(queue), lease).await).pop()
}

/// Waits for work of `queue` (up to 60 s) until a wait has held for
/// [`QUIET`]: that wait is blocked on nothing but a release. Then runs
/// `release` and asserts the wait ends within [`WOKEN_WITHIN`] of it.
async fn woken_by<S, F, Fut>(s: &S, ns: &Namespace, queue: &str, what: &str, release: F)
where
    S: Storage,
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    let queues = [q(queue)];
    let mut tries = 0;
    let wait = loop {
        let wait = s.wait_for_work(ns, &queues, Duration::from_secs(60));
        let mut wait = Box::pin(wait);
        tokio::select! {
            r = &mut wait => {
                ok("wait_for_work", r);
                tries += 1;
                assert!(tries < 20, "{what}: every wait ended within {QUIET:?} with nothing released");
            }
            () = tokio::time::sleep(QUIET) => break wait,
        }
    };
    let released = Instant::now();
    let (ended, ()) = tokio::join!(tokio::time::timeout(WOKEN_WITHIN + QUIET, wait), release());
    match ended {
        Ok(r) => ok("wait_for_work", r),
        Err(_) => panic!("{what}: an idle claimer's wait did not end within {WOKEN_WITHIN:?} of it"),
    }
    assert!(
        released.elapsed() < WOKEN_WITHIN + QUIET,
        "{what}: the wait ended {:?} after the release",
        released.elapsed()
    );
}

async fn set_limits<S: QueueControl>(s: &S, ns: &Namespace, queue: &str, limits: QueueLimits) {
    ok("set_queue_limits", s.set_queue_limits(ns, &q(queue), &limits).await);
}

/// A slot of a queue at its concurrency limit, freed by a completion, a
/// dead letter, a reap to a dead letter and a delete, wakes an idle
/// claimer of that queue, which then claims the next task.
pub async fn release_freed_slot_wakes_claimers<S: QueueControl>(s: &S, ns: &Namespace) {
    set_limits(s, ns, "slot", QueueLimits::new().concurrency(1)).await;
    for i in 0..5 {
        let mut t = in_queue(&format!("slot-{i}"), "slot");
        t.max_attempts = 1;
        submit(s, ns, t).await;
    }
    let mut running = claim_one(s, ns, "slot", LONG_LEASE).await.unwrap_or_else(|| panic!("slot-0 is due"));
    assert!(claim_one(s, ns, "slot", LONG_LEASE).await.is_none(), "the queue is at its limit");

    let done = running.clone();
    woken_by(s, ns, "slot", "a completion", || async {
        ok("complete", s.finish(ns, &lease(&done), Finish::Completed).await);
    })
    .await;
    running = claim_one(s, ns, "slot", LONG_LEASE).await.unwrap_or_else(|| panic!("a slot is free"));

    let dead = running.clone();
    woken_by(s, ns, "slot", "a dead letter", || async {
        let failed = Finish::Failed { error: "gave up".to_owned() };
        assert_eq!(ok("fail", s.finish(ns, &lease(&dead), failed).await), TaskState::Failed);
    })
    .await;
    running = claim_one(s, ns, "slot", Duration::from_millis(300)).await.unwrap_or_else(|| panic!("free"));

    let reaped = running.id.clone();
    woken_by(s, ns, "slot", "a reap to a dead letter", || async {
        super::wait_until(Duration::from_secs(10), || async {
            let _ = s.reap(ns, 100).await;
            super::support::record(s, ns, &reaped).await.state == TaskState::Failed
        })
        .await;
    })
    .await;
    running = claim_one(s, ns, "slot", LONG_LEASE).await.unwrap_or_else(|| panic!("a slot is free"));

    let gone = running.id.clone();
    woken_by(s, ns, "slot", "a delete of a running task", || async {
        assert!(ok("delete", s.delete(ns, &gone).await), "the running task was deleted");
    })
    .await;
    assert!(claim_one(s, ns, "slot", LONG_LEASE).await.is_some(), "the deleted task's slot is free");
}

/// Raising a concurrency limit, and removing it, wakes an idle claimer.
pub async fn release_raised_limit_wakes_claimers<S: QueueControl>(s: &S, ns: &Namespace) {
    set_limits(s, ns, "raise", QueueLimits::new().concurrency(1)).await;
    for i in 0..4 {
        submit(s, ns, in_queue(&format!("raise-{i}"), "raise")).await;
    }
    assert!(claim_one(s, ns, "raise", LONG_LEASE).await.is_some());
    woken_by(s, ns, "raise", "a raised limit", || async {
        set_limits(s, ns, "raise", QueueLimits::new().concurrency(2)).await;
    })
    .await;
    assert!(claim_one(s, ns, "raise", LONG_LEASE).await.is_some(), "the raised limit lets one more run");
    woken_by(s, ns, "raise", "a removed limit", || async {
        set_limits(s, ns, "raise", QueueLimits::new()).await;
    })
    .await;
    assert!(claim_one(s, ns, "raise", LONG_LEASE).await.is_some(), "no limit: the next runs");
}

/// An empty rate bucket ends an idle claimer's wait when its next token
/// is earned, not at the end of the wait.
pub async fn release_refilled_tokens_wake_claimers<S: QueueControl>(s: &S, ns: &Namespace) {
    let rate = RateLimit::new(1, Duration::from_secs(1))
        .and_then(|r| r.burst(1))
        .unwrap_or_else(|e| panic!("rate: {e}"));
    set_limits(s, ns, "rate", QueueLimits::new().rate(rate)).await;
    for i in 0..3 {
        submit(s, ns, in_queue(&format!("rate-{i}"), "rate")).await;
    }
    assert!(claim_one(s, ns, "rate", LONG_LEASE).await.is_some(), "the bucket's one token");
    // The wait itself sleeps until the token is earned: nothing to do.
    let started = Instant::now();
    ok("wait", s.wait_for_work(ns, &[q("rate")], Duration::from_secs(60)).await);
    assert!(started.elapsed() < WOKEN_WITHIN, "the refill ended the wait after {:?}", started.elapsed());
    super::wait_until(WOKEN_WITHIN, || async { claim_one(s, ns, "rate", LONG_LEASE).await.is_some() }).await;
}

/// Resuming a paused queue wakes an idle claimer of it.
pub async fn release_resumed_queue_wakes_claimers<S: QueueControl>(s: &S, ns: &Namespace) {
    ok("pause", s.pause_queue(ns, &q("held"), true).await);
    submit(s, ns, in_queue("held-0", "held")).await;
    woken_by(s, ns, "held", "a resume", || async {
        ok("resume", s.pause_queue(ns, &q("held"), false).await);
    })
    .await;
    assert!(claim_one(s, ns, "held", LONG_LEASE).await.is_some(), "the resumed queue's task");
}

/// Running a delayed task now wakes an idle claimer.
pub async fn release_run_now_wakes_claimers<S: RunNow>(s: &S, ns: &Namespace) {
    let mut later = new_task("run-now-later");
    later.due = Due::After(Duration::from_secs(3_600));
    let id = submit(s, ns, later).await;
    woken_by(s, ns, crate::queue::DEFAULT_QUEUE, "a run now", || async {
        ok("run_now", s.run_now(ns, &id).await);
    })
    .await;
    assert!(claim_one(s, ns, crate::queue::DEFAULT_QUEUE, LONG_LEASE).await.is_some(), "the task run now");
}

/// Requeueing a dead letter wakes an idle claimer.
pub async fn release_requeue_wakes_claimers<S: Storage>(s: &S, ns: &Namespace) {
    let id = task_in_state(s, ns, "requeued", TaskState::Failed).await;
    woken_by(s, ns, crate::queue::DEFAULT_QUEUE, "a requeue", || async {
        ok("requeue", s.requeue(ns, &id).await);
    })
    .await;
    assert!(claim_one(s, ns, crate::queue::DEFAULT_QUEUE, LONG_LEASE).await.is_some(), "the requeued task");
}

/// A retry's backoff and a debounce window end an idle claimer's wait
/// when they end, not at the end of the wait.
pub async fn release_backoff_and_debounce_end_waits<S: Storage>(s: &S, ns: &Namespace) {
    submit(s, ns, new_task("backoff")).await;
    let rec =
        claim_one(s, ns, crate::queue::DEFAULT_QUEUE, LONG_LEASE).await.unwrap_or_else(|| panic!("due"));
    let retry = Finish::Retry { delay: Duration::from_millis(700), error: "again".to_owned() };
    ok("retry", s.finish(ns, &lease(&rec), retry).await);
    let started = Instant::now();
    due_claimed(s, ns, "the retry's backoff").await;
    assert!(started.elapsed() >= Duration::from_millis(600), "the backoff was kept: {:?}", started.elapsed());

    let mut debounced = new_task("debounced");
    // Generated, as the builder sends it: a partitioned store places it.
    debounced.id = crate::TaskId::generate();
    debounced.mode = SubmitMode::Debounce(Debounce::new("debounce-key", Duration::from_millis(700)));
    ok("debounce", s.submit(ns, debounced).await);
    let started = Instant::now();
    due_claimed(s, ns, "the debounce window").await;
    assert!(started.elapsed() >= Duration::from_millis(600), "the window was kept: {:?}", started.elapsed());
}

/// Waits (60 s each, spurious ends allowed) and claims until a task of
/// the default queue is claimed, within [`WOKEN_WITHIN`].
async fn due_claimed<S: Storage>(s: &S, ns: &Namespace, what: &str) {
    let give_up = Instant::now() + WOKEN_WITHIN;
    let default = [q(crate::queue::DEFAULT_QUEUE)];
    loop {
        let left = give_up.saturating_duration_since(Instant::now());
        let wait = s.wait_for_work(ns, &default, Duration::from_secs(60));
        match tokio::time::timeout(left, wait).await {
            Ok(r) => ok("wait_for_work", r),
            Err(_) => panic!(
                "{what}: the task was not due within {WOKEN_WITHIN:?}, or its due time did not end the wait"
            ),
        }
        if claim_one(s, ns, crate::queue::DEFAULT_QUEUE, LONG_LEASE).await.is_some() {
            return;
        }
    }
}

/// Spans of handler runs, by the process clock.
type Spans = Arc<Mutex<Vec<(std::time::Instant, std::time::Instant)>>>;

/// Three executors, one per store handle in `stores` (give three handles
/// connected separately, as three processes would be), of concurrency 16
/// and a 60 s idle wait, serve a queue limited to 5 running tasks: 100
/// tasks of 50 ms take about 1 s. The limit is never exceeded, and every
/// freed slot is used at once: a claimer that waited for a wake-up that
/// never comes would take a minute per missed slot.
///
/// # Panics
/// When the limit is exceeded, or the tasks take over 10 s.
pub async fn limited_queue_uses_freed_slots<S: crate::storage::ExecutorStorage>(
    stores: Vec<S>,
    ns: &Namespace,
) {
    let spans = Spans::default();
    let handler = || {
        let spans = Arc::clone(&spans);
        Handler::new("release_limited", move |_: u32, _ctx: TaskContext| {
            let spans = Arc::clone(&spans);
            async move {
                let start = std::time::Instant::now();
                tokio::time::sleep(Duration::from_millis(50)).await;
                spans.lock().unwrap_or_else(PoisonError::into_inner).push((start, std::time::Instant::now()));
            }
        })
        .options(TaskOptions::new().queue(q("limited")))
    };
    let mut running = Vec::new();
    let mut client = None;
    for store in stores {
        let executor = ok(
            "build",
            Executor::builder(store)
                .namespace(ns.as_str())
                .concurrency(16)
                .max_idle_wait(Duration::from_secs(60))
                .queues([("limited", 1)])
                .handler(handler())
                .build()
                .await,
        );
        client.get_or_insert_with(|| executor.client().clone());
        running.push(executor.start());
    }
    let client = client.unwrap_or_else(|| panic!("give at least one store"));
    ok("limits", client.set_queue_limits("limited", QueueLimits::new().concurrency(5)).await);
    let options = TaskOptions::new().queue(q("limited"));
    let started = Instant::now();
    for i in 0..100u32 {
        ok("submit", TaskBuilder::new("release_limited", i, options.clone()).submit(&client).await);
    }
    let limit = Duration::from_secs(10);
    super::wait_until(limit, || async { spans.lock().map(|s| s.len()).unwrap_or(0) >= 100 }).await;
    let took = started.elapsed();
    for r in running {
        ok("shutdown", r.shutdown().await);
    }
    let all = spans.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(all.len(), 100, "every task ran once");
    assert!(super::max_overlap(&all) <= 5, "the limit of 5 was exceeded: {}", super::max_overlap(&all));
    assert!(took < limit, "100 tasks of 50 ms, 5 at a time, took {took:?}");
}

/// A task promoted from the cold store to the hot one, ahead of its due
/// time, ends an idle claimer's wait when it falls due: the hot store
/// learns of it at the promotion (the import wakes its claimers, which
/// then sleep until its due time).
///
/// # Panics
/// When the promoted task's due time does not end the wait.
pub async fn tiered_promotion_wakes_claimers<H, C>(tiered: &crate::TieredStorage<H, C>, ns: &Namespace)
where
    H: crate::storage::TierStorage,
    C: crate::storage::TierStorage,
{
    let horizon = tiered.horizon_len();
    let mut cold = new_task("promoted");
    cold.due = Due::After(horizon + Duration::from_secs(2));
    submit(tiered, ns, cold).await;
    assert!(ok("get", tiered.cold().get(ns, &super::support::tid("promoted")).await).is_some(), "in cold");
    let due_at = Instant::now() + horizon + Duration::from_secs(2);
    // The leader's housekeeping promotes it once it is within the horizon.
    let promote = async {
        super::wait_until(horizon + Duration::from_secs(10), || async {
            ok("housekeeping", tiered.housekeeping(ns).await);
            ok("get", tiered.hot().get(ns, &super::support::tid("promoted")).await).is_some()
        })
        .await;
    };
    let default = [q(crate::queue::DEFAULT_QUEUE)];
    let (woken, ()) = tokio::join!(
        async {
            loop {
                ok("wait", tiered.wait_for_work(ns, &default, Duration::from_secs(60)).await);
                if Instant::now() >= due_at {
                    return Instant::now();
                }
            }
        },
        promote
    );
    assert!(
        woken.duration_since(due_at) < WOKEN_WITHIN,
        "the promoted task's due time ended the wait {:?} late",
        woken.duration_since(due_at)
    );
    assert!(claim_one(tiered, ns, crate::queue::DEFAULT_QUEUE, LONG_LEASE).await.is_some(), "it is claimed");
}
