//! Regression tests of the runtime's hardening: user code that panics while
//! an attempt starts, out-of-range retry delays and settings, the
//! cancellation token on a timeout, listeners that see the record after
//! each transition (the reaper's too), and lease-loss reports keyed by fence.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use proptest::{
    prelude::*,
    strategy::{Strategy, ValueTree},
    test_runner::TestRunner,
};
use reliable_executor::{
    Error, Executor, Handler, Listener, MemoryStorage, Namespace, Result, RetryPolicy, TaskContext,
    TaskError, TaskId, TaskOptions, TaskRecord, TaskState, WorkerId,
    query::CancelOutcome,
    queue::ClaimPlan,
    storage::{Finish, Heartbeat, Lease, Storage},
    testing::{Intercept, Intercepted},
};
use serde::{Deserialize, Deserializer};

use crate::support::{builder, finished, submit, unexpected};

/// A payload whose `Deserialize` panics: user code inside the decode.
#[derive(Debug)]
struct Explosive;

impl<'de> Deserialize<'de> for Explosive {
    fn deserialize<D: Deserializer<'de>>(_: D) -> std::result::Result<Self, D::Error> {
        panic!("decoder exploded");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_while_an_attempt_starts_ends_error_not_running() -> Result<()> {
    let decode = Handler::new("explosive", |_: Explosive, _ctx: TaskContext| async {});
    // The closure panics before it returns its future.
    let start = Handler::new("eager", |_: (), _ctx: TaskContext| -> std::future::Ready<()> {
        panic!("handler body panicked before its first await")
    });
    let fine = Handler::new("fine", |_: (), _ctx: TaskContext| async {});
    let ex = builder(MemoryStorage::new()).handler(decode).handler(start).handler(fine).build().await?;
    let running = ex.start();
    let a = submit(&ex, "explosive", (), TaskOptions::new()).await?;
    let b = submit(&ex, "eager", (), TaskOptions::new()).await?;
    let c = submit(&ex, "fine", (), TaskOptions::new()).await?;
    for (id, message) in [(&a, "decoder exploded"), (&b, "before its first await")] {
        let r = finished(&ex, id).await?;
        assert_eq!(r.state, TaskState::Error, "{r:?}");
        let error = r.last_error.as_deref().unwrap_or_default();
        assert!(error.contains(message) && error.contains("panicked"), "{error}");
        // A finished task is not running: cancel must not answer `Requested`.
        let cancel = ex.cancel(id).await;
        assert!(matches!(cancel, Err(Error::IllegalTransition { .. })), "{cancel:?}");
    }
    assert_eq!(finished(&ex, &c).await?.state, TaskState::Completed);
    let report = running.shutdown().await?;
    assert_eq!((report.drained, report.released), (0, 0), "nothing may stay in flight: {report:?}");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn an_out_of_range_retry_delay_dead_letters_alone() -> Result<()> {
    let handler = Handler::new("never_again", |n: u32, _ctx: TaskContext| async move {
        if n == 0 { Err(TaskError::retry_after("come back never", Duration::MAX)) } else { Ok(()) }
    });
    let panicky = RetryPolicy::custom("panics", |_| panic!("policy bug"));
    let policy =
        Handler::new("bad_policy", |_: (), _ctx: TaskContext| async { Err::<(), _>(TaskError::retry("x")) })
            .options(TaskOptions::new().retry(panicky));
    let ex = builder(MemoryStorage::new()).handler(handler).handler(policy).build().await?;
    let running = ex.start();
    let bad = submit(&ex, "never_again", 0u32, TaskOptions::new()).await?;
    let mut good = Vec::new();
    for n in 1..=20u32 {
        good.push(submit(&ex, "never_again", n, TaskOptions::new()).await?);
    }
    let policy_task = submit(&ex, "bad_policy", (), TaskOptions::new()).await?;
    let r = finished(&ex, &bad).await?;
    assert_eq!(r.state, TaskState::Failed, "{r:?}");
    assert!(r.last_error.as_deref().unwrap_or_default().contains("longer than the maximum"), "{r:?}");
    assert_eq!(r.attempts, 1, "no retry storm: {r:?}");
    for id in &good {
        let r = finished(&ex, id).await?;
        assert_eq!((r.state, r.attempts), (TaskState::Completed, 1), "a neighbour re-ran or failed: {r:?}");
    }
    let r = finished(&ex, &policy_task).await?;
    assert_eq!(r.state, TaskState::Failed, "{r:?}");
    assert!(r.last_error.as_deref().unwrap_or_default().contains("policy bug"), "{r:?}");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn an_attempt_timeout_fires_the_cancellation_token() -> Result<()> {
    let stopped = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&stopped);
    let handler = Handler::new("spawns_work", move |_: (), ctx: TaskContext| {
        let seen = Arc::clone(&seen);
        async move {
            // Work the handler spawned: it must learn the attempt is over.
            let token = ctx.cancellation().clone();
            tokio::spawn(async move {
                token.cancelled().await;
                seen.fetch_add(1, Ordering::SeqCst);
            });
            tokio::time::sleep(Duration::from_secs(3_600)).await;
        }
    });
    let ex = builder(MemoryStorage::new()).handler(handler).build().await?;
    let running = ex.start();
    let opts = TaskOptions::new().timeout(Duration::from_secs(1)).retry_limit(0);
    let id = submit(&ex, "spawns_work", (), opts).await?;
    let r = finished(&ex, &id).await?;
    assert_eq!(r.state, TaskState::Failed, "{r:?}");
    reliable_executor::testing::wait_until(Duration::from_secs(5), || async {
        stopped.load(Ordering::SeqCst) == 1
    })
    .await;
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn every_builder_option_is_range_checked() {
    let h = || Handler::new("h", |_: (), _ctx: TaskContext| async {});
    let cases: Vec<(&str, reliable_executor::ExecutorBuilder<MemoryStorage>)> = vec![
        ("concurrency", builder(MemoryStorage::new()).concurrency(usize::MAX)),
        ("claim_batch", builder(MemoryStorage::new()).claim_batch(usize::MAX)),
        ("lease", builder(MemoryStorage::new()).lease(Duration::MAX)),
        ("heartbeat_interval", builder(MemoryStorage::new()).heartbeat_interval(Duration::MAX)),
        ("max_idle_wait", builder(MemoryStorage::new()).max_idle_wait(Duration::MAX)),
        ("shutdown_grace", builder(MemoryStorage::new()).shutdown_grace(Duration::MAX)),
        ("cancel_grace", builder(MemoryStorage::new()).cancel_grace(Duration::MAX)),
        ("housekeeping_interval", builder(MemoryStorage::new()).housekeeping_interval(Duration::MAX)),
        ("trim_interval", builder(MemoryStorage::new()).trim_interval(Duration::MAX)),
        (
            "retention.completed",
            builder(MemoryStorage::new()).retention(
                reliable_executor::query::Retention::default().completed(Duration::MAX).dead_letter(None),
            ),
        ),
        (
            "retry interval",
            builder(MemoryStorage::new())
                .handler(h().options(TaskOptions::new().retry(RetryPolicy::fixed(Duration::MAX)))),
        ),
    ];
    for (option, b) in cases {
        match b.build().await {
            Err(Error::Invalid { what, reason }) => {
                assert_eq!(what, option, "the error names the option ({reason})");
                assert!(
                    reason.contains("..=") || reason.contains("maximum") || reason.contains("half"),
                    "{reason}"
                );
            }
            other => panic!("{option} out of range: expected Invalid, got {other:?}"),
        }
    }
}

/// Drives random values of every runtime option through `build` and, when
/// accepted, a start, one task and a shutdown: a clear error or a working
/// executor, never a panic.
#[tokio::test(start_paused = true)]
async fn proptest_builder_options_never_panic() -> Result<()> {
    // Mostly plausible values, so accepted settings are exercised too.
    let duration = prop_oneof![
        1 => Just(Duration::ZERO),
        1 => Just(Duration::MAX),
        1 => (0u64..=u64::MAX).prop_map(Duration::from_millis),
        20 => (1u64..5_000).prop_map(Duration::from_millis),
    ];
    let count =
        prop_oneof![1 => Just(0usize), 1 => Just(usize::MAX), 20 => 1usize..200, 1 => 0usize..=usize::MAX];
    let case = (
        (count.clone(), count.clone(), count.clone()),
        (duration.clone(), duration.clone(), duration.clone(), duration.clone()),
        (duration.clone(), duration.clone(), duration.clone(), duration),
        count,
    );
    let mut runner = TestRunner::deterministic();
    let mut built = 0;
    for n in 0..200 {
        let tree = case.new_tree(&mut runner).map_err(unexpected)?;
        let ((conc, batch, payload), (lease, hb, idle, hk), (grace, cgrace, trim, completed), _) =
            tree.current();
        let b = Executor::builder(MemoryStorage::new())
            .namespace(format!("prop-{n}"))
            .concurrency(conc)
            .claim_batch(batch)
            .max_payload(payload)
            .lease(lease)
            .heartbeat_interval(hb)
            .max_idle_wait(idle)
            .housekeeping_interval(hk)
            .shutdown_grace(grace)
            .cancel_grace(cgrace)
            .trim_interval(trim)
            .retention(
                reliable_executor::query::Retention::default()
                    .completed(completed)
                    .dead_letter(Some(completed)),
            )
            .handler(Handler::new("noop", |_: (), _ctx: TaskContext| async {}));
        let ex = match b.build().await {
            Ok(ex) => ex,
            Err(Error::Invalid { .. }) => continue,
            Err(e) => return Err(unexpected(format!("case {n}: not an Invalid error: {e}"))),
        };
        built += 1;
        let running = ex.start();
        match submit(&ex, "noop", (), TaskOptions::new()).await {
            Ok(id) => assert_eq!(finished(&ex, &id).await?.state, TaskState::Completed, "case {n}"),
            Err(Error::PayloadTooLarge { .. }) => {}
            Err(e) => return Err(e),
        }
        running.shutdown().await?;
    }
    assert!(built > 5, "the proptest must also exercise accepted settings ({built} built)");
    Ok(())
}

/// Records each hook's record state.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<(&'static str, TaskId, TaskState)>>);

impl Seen {
    fn push(&self, hook: &'static str, task: &TaskRecord) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((
            hook,
            task.id.clone(),
            task.state,
        ));
    }
    fn of(&self, id: &TaskId) -> Vec<(&'static str, TaskState)> {
        let seen = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.iter().filter(|(_, i, _)| i == id).map(|(h, _, s)| (*h, *s)).collect()
    }
}

#[derive(Debug, Clone)]
struct Recorder(Arc<Seen>);

impl Listener for Recorder {
    fn on_started(&self, task: &TaskRecord) {
        self.0.push("started", task);
    }
    fn on_completed(&self, task: &TaskRecord) {
        self.0.push("completed", task);
    }
    fn on_retry_scheduled(&self, task: &TaskRecord, _error: &str, _delay_ms: u64) {
        self.0.push("retry_scheduled", task);
    }
    fn on_dead_lettered(&self, task: &TaskRecord, _state: TaskState, _error: &str) {
        self.0.push("dead_lettered", task);
    }
}

#[tokio::test(start_paused = true)]
async fn listeners_see_the_record_after_each_transition_and_reaper_dead_letters() -> Result<()> {
    let seen = Arc::new(Seen::default());
    let storage = MemoryStorage::new();
    let handler = Handler::new("flaky", |n: u32, ctx: TaskContext| async move {
        match n {
            0 if ctx.attempt() == 1 => Err(TaskError::retry_after("once more", Duration::from_millis(10))),
            1 => Err(TaskError::abort("give up")),
            _ => Ok(()),
        }
    });
    let ex = builder(storage.clone()).handler(handler).listener(Recorder(Arc::clone(&seen))).build().await?;
    let ns = Namespace::new("runtime-test")?;
    // A task whose only attempt was claimed by a worker that died: the
    // reaper dead-letters it, and listeners must hear of it.
    let orphan = submit(&ex, "flaky", 2u32, TaskOptions::new().retry_limit(0)).await?;
    let claimed = storage
        .claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::from_millis(200))
        .await?;
    assert_eq!(claimed.len(), 1, "the orphan was claimed by the dead worker");
    let running = ex.start();
    let retried = submit(&ex, "flaky", 0u32, TaskOptions::new()).await?;
    let aborted = submit(&ex, "flaky", 1u32, TaskOptions::new()).await?;
    assert_eq!(finished(&ex, &retried).await?.state, TaskState::Completed);
    assert_eq!(finished(&ex, &aborted).await?.state, TaskState::Failed);
    assert_eq!(finished(&ex, &orphan).await?.state, TaskState::Failed);
    reliable_executor::testing::wait_until(Duration::from_secs(10), || async {
        !seen.of(&orphan).is_empty()
    })
    .await;
    running.shutdown().await?;
    assert_eq!(
        seen.of(&retried),
        [
            ("started", TaskState::Running),
            ("retry_scheduled", TaskState::Pending),
            ("started", TaskState::Running),
            ("completed", TaskState::Completed)
        ]
    );
    assert_eq!(seen.of(&aborted), [("started", TaskState::Running), ("dead_lettered", TaskState::Failed)]);
    assert_eq!(seen.of(&orphan), [("dead_lettered", TaskState::Failed)], "the reaper's dead letter");
    Ok(())
}

/// Delays each heartbeat before it reaches the store, so its report can
/// arrive after the attempt it spoke for has ended and a newer one began.
#[derive(Debug, Default)]
struct SlowHeartbeat;

impl Intercept<MemoryStorage> for SlowHeartbeat {
    async fn heartbeat(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> Result<Heartbeat> {
        tokio::time::sleep(Duration::from_millis(300)).await;
        inner.heartbeat(ns, leases, lease).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_late_lost_report_for_an_old_fence_does_not_stop_the_new_attempt() -> Result<()> {
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stopped);
    let handler = Handler::new("twice", move |_: (), ctx: TaskContext| {
        let flag = Arc::clone(&flag);
        async move {
            if ctx.attempt() == 1 {
                // Ends after the first heartbeat was sent (500 ms) and
                // before its answer (800 ms), which then reports fence 1 lost.
                tokio::time::sleep(Duration::from_millis(600)).await;
                return Err(TaskError::retry_after("again", Duration::ZERO));
            }
            tokio::select! {
                () = ctx.cancellation().cancelled() => flag.store(true, Ordering::SeqCst),
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            Ok(())
        }
    });
    let storage = Intercepted::new(MemoryStorage::new(), SlowHeartbeat);
    let ex = Executor::builder(storage)
        .namespace("fence-keyed")
        .lease(Duration::from_secs(2))
        .heartbeat_interval(Duration::from_millis(500))
        .housekeeping_interval(Duration::from_millis(200))
        .handler(handler)
        .build()
        .await?;
    let running = ex.start();
    let id = reliable_executor::TaskBuilder::new("twice", (), TaskOptions::new()).submit(&ex).await?.id;
    let r = ex.wait_for(&id, Duration::from_secs(60)).await?;
    running.shutdown().await?;
    assert!(!stopped.load(Ordering::SeqCst), "attempt 2 was stopped by a report about attempt 1");
    assert_eq!((r.state, r.attempts), (TaskState::Completed, 2), "{r:?}");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_finish_the_store_refuses_as_invalid_is_recorded_as_error() -> Result<()> {
    /// Refuses every retry as invalid, as a store with a narrower range might.
    #[derive(Debug, Default)]
    struct NoRetries;
    impl Intercept<MemoryStorage> for NoRetries {
        async fn finish(
            &self,
            inner: &MemoryStorage,
            ns: &Namespace,
            lease: &Lease,
            finish: Finish,
        ) -> Result<TaskState> {
            if matches!(finish, Finish::Retry { .. }) {
                return Err(Error::invalid("retry delay", "this store keeps no retries"));
            }
            inner.finish(ns, lease, finish).await
        }
    }
    let handler =
        Handler::new("retries", |_: (), _ctx: TaskContext| async { Err::<(), _>(TaskError::retry("x")) });
    let ex = Executor::builder(Intercepted::new(MemoryStorage::new(), NoRetries))
        .namespace("refused")
        .handler(handler)
        .build()
        .await?;
    let running = ex.start();
    let id = reliable_executor::TaskBuilder::new("retries", (), TaskOptions::new()).submit(&ex).await?.id;
    let r = ex.wait_for(&id, Duration::from_secs(60)).await?;
    running.shutdown().await?;
    assert_eq!(r.state, TaskState::Error, "{r:?}");
    assert!(r.last_error.as_deref().unwrap_or_default().contains("keeps no retries"), "{r:?}");
    let cancel = ex.cancel(&id).await;
    assert!(!matches!(cancel, Ok(CancelOutcome::Requested)), "{cancel:?}");
    assert!(ex.delete(&id).await?, "delete of an existing task answers true");
    assert_eq!(ex.status(&id).await?, None, "a deleted task is gone");
    assert!(!ex.delete(&id).await?, "delete of a missing task answers false");
    Ok(())
}

/// Counts `on_submitted` calls.
#[derive(Debug, Default, Clone)]
struct SubmitCount(Arc<AtomicUsize>);

impl Listener for SubmitCount {
    fn on_submitted(&self, _id: &TaskId, _name: &str, _outcome: reliable_executor::SubmitOutcome) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn submit_many_checks_each_task_like_a_single_submit() -> Result<()> {
    let count = SubmitCount::default();
    let ex = builder(MemoryStorage::new())
        .handler(Handler::new("known", |_: u32, _ctx: TaskContext| async {}))
        .listener(count.clone())
        .max_payload(100)
        .build()
        .await?;
    let task = |name: &str, payload: serde_json::Value| {
        reliable_executor::TaskBuilder::new(name, payload, TaskOptions::new()).into_new_task()
    };
    // More than one store batch, with bad tasks spread through it.
    let mut tasks = Vec::new();
    for n in 0..(reliable_executor::client::SUBMIT_BATCH * 2 + 3) {
        tasks.push(match n % 250 {
            7 => task("misspelled", serde_json::json!(n))?,
            8 => task("known", serde_json::json!("x".repeat(200)))?,
            9 => {
                let mut t = task("known", serde_json::json!(n))?;
                t.due = reliable_executor::storage::Due::After(Duration::MAX);
                t
            }
            _ => task("known", serde_json::json!(n))?,
        });
    }
    let first_id = tasks[0].id.clone();
    tasks.push({
        let mut t = task("known", serde_json::json!(0))?;
        t.id = first_id;
        t
    });
    let n = tasks.len();
    let answers = ex.submit_many(tasks).await;
    assert_eq!(answers.len(), n, "one answer per task");
    let mut created = 0;
    for (i, answer) in answers.iter().enumerate() {
        match (i % 250, answer) {
            (_, Ok(s)) if i < n - 1 && i % 250 > 9 || i % 250 < 7 => {
                assert_eq!(s.outcome, reliable_executor::SubmitOutcome::Created);
                created += 1;
            }
            (7, Err(Error::UnknownTask(_)))
            | (8, Err(Error::PayloadTooLarge { .. }))
            | (9, Err(Error::Invalid { .. })) => {}
            _ if i == n - 1 => assert!(matches!(answer, Err(Error::DuplicateId(_))), "{answer:?}"),
            other => panic!("task {i}: {other:?}"),
        }
    }
    assert_eq!(count.0.load(Ordering::SeqCst), created, "on_submitted once per stored task");
    assert_eq!(ex.counts().await?.total(), created as u64, "only the good tasks are stored");
    Ok(())
}
