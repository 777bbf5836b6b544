//! A rolling deploy: an older binary, without the handler a newer one
//! registers, claims the new task name. The task goes back to the queue
//! (attempt not counted, growing delay) until a worker that has the handler
//! runs it; it is dead-lettered only after the unknown-task grace.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use reliable_executor::{
    Handler, Listener, MemoryStorage, TaskBuilder, TaskContext, TaskOptions, TaskRecord, TaskState,
};

use crate::support::builder;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Counts the attempts an executor starts.
#[derive(Clone, Debug, Default)]
struct Starts(Arc<AtomicUsize>);

impl Listener for Starts {
    fn on_started(&self, _task: &TaskRecord) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

const TASKS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_worker_gives_new_tasks_back_and_the_new_worker_runs_them_all() -> TestResult {
    let store = MemoryStorage::new();
    let old_starts = Starts::default();
    // The old binary: a handler of its own, not the new task's.
    let old = builder(store.clone())
        .handler(Handler::new("old_task", |_: (), _ctx: TaskContext| async {}))
        .listener(old_starts.clone())
        .build()
        .await?;
    let new = builder(store.clone())
        .handler(Handler::new("old_task", |_: (), _ctx: TaskContext| async {}))
        .handler(Handler::new("new_task", |_: u64, _ctx: TaskContext| async {}))
        .build()
        .await?;
    let tasks = (0..TASKS as u64)
        .map(|n| TaskBuilder::new("new_task", n, TaskOptions::new().retry_limit(0)).into_new_task())
        .collect::<Result<Vec<_>, _>>()?;
    let ids: Vec<_> = tasks.iter().map(|t| t.id.clone()).collect();
    let answers = new.submit_many(tasks).await;
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");

    // Only the old binary runs at first: it claims every task and gives each back.
    let old_running = old.start();
    let start = tokio::time::Instant::now();
    while old_starts.0.load(Ordering::SeqCst) < TASKS {
        assert!(start.elapsed() < Duration::from_secs(20), "the old worker claimed every task");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let counts = store_counts(&old).await?;
    assert_eq!(counts.get(TaskState::Error), 0, "nothing dead-lettered by the old worker");
    // The new binary rolls out beside it: every task completes.
    let new_running = new.start();
    for id in &ids {
        let done = new.wait_for(id, Duration::from_secs(60)).await?;
        assert_eq!(done.state, TaskState::Completed, "{done:?}");
        assert_eq!(done.attempts, 1, "the old worker's claims were not counted: {done:?}");
    }
    // The old worker did not spin: each task came back after a delay.
    let claims = old_starts.0.load(Ordering::SeqCst);
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        (claims as f64) <= TASKS as f64 * (seconds + 2.0),
        "{claims} claims of {TASKS} tasks in {seconds:.1} s: the old worker spins"
    );
    old_running.shutdown().await?;
    new_running.shutdown().await?;
    Ok(())
}

async fn store_counts(
    ex: &reliable_executor::Executor<MemoryStorage>,
) -> Result<reliable_executor::query::StateCounts, reliable_executor::Error> {
    ex.counts().await
}

/// Past the grace, a task no worker can run ends ERROR with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_no_worker_can_run_is_dead_lettered_after_the_grace() -> TestResult {
    let store = MemoryStorage::new();
    let producer = reliable_executor::Client::without_name_check(store.clone(), "runtime-test".try_into()?);
    let id = TaskBuilder::new("retired_task", (), TaskOptions::new()).submit(&producer).await?.id;
    let ex = builder(store).unknown_task_grace(Duration::from_millis(1_500)).build().await?;
    let running = ex.start();
    let done = ex.wait_for(&id, Duration::from_secs(30)).await?;
    running.shutdown().await?;
    assert_eq!(done.state, TaskState::Error, "{done:?}");
    let error = done.last_error.unwrap_or_default();
    assert!(error.contains("retired_task") && error.contains("grace"), "{error}");
    assert_eq!(done.attempts, 1, "given back twice uncounted, then one counted attempt");
    Ok(())
}

/// A zero grace keeps the old behaviour: ERROR at the first claim.
#[tokio::test]
async fn a_zero_grace_dead_letters_at_once() -> TestResult {
    let store = MemoryStorage::new();
    let producer = reliable_executor::Client::without_name_check(store.clone(), "runtime-test".try_into()?);
    let id = TaskBuilder::new("retired_task", (), TaskOptions::new()).submit(&producer).await?.id;
    let ex = builder(store).unknown_task_grace(Duration::ZERO).build().await?;
    let running = ex.start();
    let done = ex.wait_for(&id, Duration::from_secs(10)).await?;
    running.shutdown().await?;
    assert_eq!(done.state, TaskState::Error);
    Ok(())
}
