//! Backpressure, cancel, lost leases, leadership and graceful shutdown.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use reliable_executor::{
    Executor, Handler, MemoryStorage, Namespace, Result, TaskContext, TaskOptions, TaskState, WorkerId,
    query::CancelOutcome, queue::ClaimPlan, storage::Storage,
};

use crate::{
    spy::Spy,
    support::{builder, finished, submit, unexpected},
};

fn sleeper(name: &str, d: Duration) -> Handler {
    Handler::new(name, move |_: (), _ctx: TaskContext| async move { tokio::time::sleep(d).await })
}

#[tokio::test(start_paused = true)]
async fn never_more_in_flight_than_concurrency_nor_claimed_than_free_slots() -> Result<()> {
    let spy = Spy::default();
    let live = Arc::new(AtomicUsize::new(0));
    let max_live = Arc::new(AtomicUsize::new(0));
    let (l, m) = (Arc::clone(&live), Arc::clone(&max_live));
    let handler = Handler::new("work", move |_: (), _ctx: TaskContext| {
        let (l, m) = (Arc::clone(&l), Arc::clone(&m));
        async move {
            m.fetch_max(l.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            l.fetch_sub(1, Ordering::SeqCst);
        }
    });
    let ex = Executor::builder(spy.clone())
        .namespace("bp")
        .concurrency(4)
        .claim_batch(3)
        .handler(handler)
        .build()
        .await?;
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(reliable_executor::TaskBuilder::new("work", (), TaskOptions::new()).submit(&ex).await?.id);
    }
    let running = ex.start();
    for id in &ids {
        assert_eq!(ex.wait_for(id, Duration::from_secs(60)).await?.state, TaskState::Completed);
    }
    running.shutdown().await?;
    assert_eq!(max_live.load(Ordering::SeqCst), 4, "all four slots were used, never more");
    // A slot is free again once its handler returns; the result may still
    // be on its way to the store, at most `concurrency` of them at once.
    assert!(spy.hooks().max_running.load(Ordering::SeqCst) <= 8, "claimed beyond free slots and writes");
    let limits = spy.hooks().claim_limits.lock().map(|v| v.clone()).unwrap_or_default();
    assert!(limits.iter().all(|&l| (1..=3).contains(&l)), "claim limits {limits:?}");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_slot_is_free_while_its_result_is_written_and_writes_in_flight_are_bounded() -> Result<()> {
    let spy = Spy::default();
    let watch = spy.hooks().clone();
    watch.hold_finishes.store(true, Ordering::SeqCst);
    let started = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&started);
    let handler = Handler::new("quick", move |_: (), _ctx: TaskContext| {
        let s = Arc::clone(&s);
        async move {
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    let ex =
        Executor::builder(spy.clone()).namespace("writes").concurrency(2).handler(handler).build().await?;
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(reliable_executor::TaskBuilder::new("quick", (), TaskOptions::new()).submit(&ex).await?.id);
    }
    let running = ex.start();
    // Two results are being written (held) and their slots went back to the
    // claim loop: two more tasks ran in them, and wait for a write permit
    // holding their slots, so nothing else is claimed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while watch.held.load(Ordering::SeqCst) < 2 || started.load(Ordering::SeqCst) < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the next tasks did not start while results were written"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(started.load(Ordering::SeqCst), 4, "claimed beyond two running and two writing");
    assert_eq!(watch.held.load(Ordering::SeqCst), 2, "more writes in flight than the concurrency");
    assert_eq!(watch.running.load(Ordering::SeqCst), 4, "tasks RUNNING in the store");
    watch.let_finishes_through();
    for id in &ids {
        assert_eq!(ex.wait_for(id, Duration::from_secs(60)).await?.state, TaskState::Completed);
    }
    running.shutdown().await?;
    assert_eq!(started.load(Ordering::SeqCst), 10, "each task ran once");
    assert!(watch.max_running.load(Ordering::SeqCst) <= 4, "RUNNING in the store beyond 2 x concurrency");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn cancel_of_a_running_task_reaches_the_handler() -> Result<()> {
    let handler = Handler::new("cancellable", |_: (), ctx: TaskContext| async move {
        tokio::select! {
            () = ctx.cancelled() => Err(reliable_executor::TaskError::retry("stopped on request")),
            () = tokio::time::sleep(Duration::from_secs(3_600)) => Ok(()),
        }
    });
    let ex = builder(MemoryStorage::new()).handler(handler).build().await?;
    let running = ex.start();
    let id = submit(&ex, "cancellable", (), TaskOptions::new()).await?;
    crate::support::wait_state(&ex, &id, TaskState::Running).await?;
    assert_eq!(ex.cancel(&id).await?, CancelOutcome::Requested);
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Cancelled);
    assert_eq!(record.attempts, 1);
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_stops_the_attempt_and_writes_nothing() -> Result<()> {
    let spy = Spy::default();
    let stopped = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&stopped);
    let handler = Handler::new("long", move |_: (), ctx: TaskContext| {
        let s = Arc::clone(&s);
        async move {
            ctx.cancelled().await;
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    let ex = Executor::builder(spy.clone())
        .namespace("lost")
        .lease(Duration::from_secs(2))
        .heartbeat_interval(Duration::from_millis(500))
        .housekeeping_interval(Duration::from_secs(3_600))
        .handler(handler)
        .build()
        .await?;
    let running = ex.start();
    let id = reliable_executor::TaskBuilder::new("long", (), TaskOptions::new()).submit(&ex).await?.id;
    crate::support::wait_state(&ex, &id, TaskState::Running).await?;
    spy.hooks().lose_leases.store(true, Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(10), async {
        while stopped.load(Ordering::SeqCst) == 0 || running.in_flight() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(unexpected)?;
    // The attempt stopped without writing: the task stays RUNNING for the reaper.
    assert_eq!(spy.hooks().running.load(Ordering::SeqCst), 1, "no finish was written");
    let record = ex.status(&id).await?.ok_or_else(|| unexpected("task vanished"))?;
    assert_eq!(record.state, TaskState::Running, "no write after losing the lease");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_leader_reaps_a_dead_workers_task_and_it_runs_again() -> Result<()> {
    let storage = MemoryStorage::new();
    let ns = Namespace::new("runtime-test")?;
    let ex = builder(storage.clone())
        .handler(Handler::new("job", |_: (), _ctx: TaskContext| async {}))
        .build()
        .await?;
    let id = submit(&ex, "job", (), TaskOptions::new()).await?;
    // A worker that claims and then dies without a heartbeat.
    let dead = WorkerId::new("dead-worker")?;
    let claimed = storage.claim(&ns, &dead, &ClaimPlan::default_queue(10), Duration::from_secs(2)).await?;
    assert_eq!(claimed.len(), 1);
    let running = ex.start();
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Completed);
    assert_eq!(record.attempts, 2, "the dead worker's attempt counts");
    assert!(record.fence >= 3, "claim, reap and claim each move the fence: {}", record.fence);
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn shutdown_drains_within_grace_and_gives_back_the_rest() -> Result<()> {
    let ex = builder(MemoryStorage::new())
        .handler(sleeper("short", Duration::from_millis(500)))
        .handler(sleeper("forever", Duration::from_secs(3_600)))
        .shutdown_grace(Duration::from_secs(2))
        .build()
        .await?;
    let running = ex.start();
    let short = submit(&ex, "short", (), TaskOptions::new()).await?;
    let long = submit(&ex, "forever", (), TaskOptions::new()).await?;
    crate::support::wait_state(&ex, &short, TaskState::Running).await?;
    crate::support::wait_state(&ex, &long, TaskState::Running).await?;
    let report = running.shutdown().await?;
    assert_eq!((report.drained, report.released), (1, 1));
    assert_eq!(ex.status(&short).await?.map(|r| r.state), Some(TaskState::Completed));
    let given_back = ex.status(&long).await?.ok_or_else(|| unexpected("lost"))?;
    assert_eq!(given_back.state, TaskState::Pending, "given back, not left RUNNING");
    assert_eq!(given_back.attempts, 0, "a released attempt is not counted");
    let counts = ex.counts().await?;
    assert_eq!(counts.get(TaskState::Running), 0);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn only_one_of_two_executors_leads_and_the_other_takes_over() -> Result<()> {
    let storage = MemoryStorage::new();
    let ns = Namespace::new("runtime-test")?;
    let a = builder(storage.clone()).worker_id("a").build().await?;
    let b = builder(storage.clone()).worker_id("b").build().await?;
    let ra = a.start();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rb = b.start();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let leader = storage.leader(&ns).await?.ok_or_else(|| unexpected("no leader"))?;
    assert_eq!(leader.worker.as_str(), "a");
    ra.shutdown().await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let next = storage.leader(&ns).await?.ok_or_else(|| unexpected("no leader after a left"))?;
    assert_eq!(next.worker.as_str(), "b");
    assert!(next.token > leader.token, "a new term has a larger fencing token");
    rb.shutdown().await?;
    Ok(())
}

/// Real time: an idle executor (idle wait 5 s) starts a new task at once.
#[tokio::test]
async fn an_idle_executor_wakes_on_submit() -> Result<()> {
    let ex = Executor::builder(MemoryStorage::new())
        .max_idle_wait(Duration::from_secs(5))
        .handler(Handler::new("ping", |_: (), _ctx: TaskContext| async {}))
        .build()
        .await?;
    let running = ex.start();
    tokio::time::sleep(Duration::from_millis(200)).await; // let it go idle
    let id = submit(&ex, "ping", (), TaskOptions::new()).await?;
    let record = ex.wait_for(&id, Duration::from_secs(3)).await?;
    assert_eq!(record.state, TaskState::Completed);
    running.shutdown().await?;
    Ok(())
}
