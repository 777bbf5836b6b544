//! Helpers shared by the runtime tests.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use reliable_executor::{
    Error, Executor, ExecutorBuilder, MemoryStorage, Result, TaskBuilder, TaskId, TaskOptions, TaskRecord,
};
use tokio::time::Instant;

/// A builder with short, test-friendly intervals.
pub(crate) fn builder(storage: MemoryStorage) -> ExecutorBuilder<MemoryStorage> {
    Executor::builder(storage)
        .namespace("runtime-test")
        .lease(Duration::from_secs(2))
        .heartbeat_interval(Duration::from_millis(500))
        .housekeeping_interval(Duration::from_millis(200))
        .max_idle_wait(Duration::from_millis(500))
        .shutdown_grace(Duration::from_secs(2))
}

/// Submits `name` with `payload` and the given defaults.
pub(crate) async fn submit<P: serde::Serialize>(
    executor: &Executor<MemoryStorage>,
    name: &str,
    payload: P,
    options: TaskOptions,
) -> Result<TaskId> {
    Ok(TaskBuilder::new(name, payload, options).submit(executor).await?.id)
}

/// Waits for a terminal state, at most 60 s of (possibly paused) time.
pub(crate) async fn finished(executor: &Executor<MemoryStorage>, id: &TaskId) -> Result<TaskRecord> {
    executor.wait_for(id, Duration::from_secs(60)).await
}

/// Records the (paused-clock) instants at which something happened.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timeline(Arc<Mutex<Vec<Instant>>>);

impl Timeline {
    pub(crate) fn mark(&self) -> usize {
        let mut v = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        v.push(Instant::now());
        v.len()
    }

    /// Gaps between consecutive marks.
    pub(crate) fn gaps(&self) -> Vec<Duration> {
        let v = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        v.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

/// Asserts `actual` is within `[expected, expected + slack]`.
pub(crate) fn assert_near(actual: Duration, expected: Duration, slack: Duration) {
    assert!(
        actual >= expected && actual <= expected + slack,
        "expected {expected:?} (+{slack:?}), got {actual:?}"
    );
}

pub(crate) fn unexpected(e: impl std::fmt::Display) -> Error {
    Error::invalid("test", e.to_string())
}

/// Waits until the task is in `state` (60 s of possibly paused time).
pub(crate) async fn wait_state<S: reliable_executor::storage::ExecutorStorage>(
    executor: &Executor<S>,
    id: &TaskId,
    state: reliable_executor::TaskState,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if executor.status(id).await?.is_some_and(|r| r.state == state) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(unexpected(format!("{id} never reached {state}")));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
