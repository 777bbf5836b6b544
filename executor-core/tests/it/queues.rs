//! Queues through the runtime: which queues an executor serves,
//! pause and resume across processes, priority order of starts, and a
//! paused or busy queue that never holds up another.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use reliable_executor::{
    Handler, MemoryStorage, QueueName, Result, TaskBuilder, TaskContext, TaskOptions, TaskState,
};

use crate::support::{builder, finished, unexpected, wait_state};

/// A handler that records the payload of each start, in order.
fn recorder(name: &str, queue: &str, log: &Arc<Mutex<Vec<u32>>>) -> Handler {
    let log = Arc::clone(log);
    let queue = QueueName::new(queue).unwrap_or_default();
    Handler::new(name, move |n: u32, _ctx: TaskContext| {
        let log = Arc::clone(&log);
        async move {
            log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(n);
        }
    })
    .options(TaskOptions::new().queue(queue))
}

fn starts(log: &Arc<Mutex<Vec<u32>>>) -> Vec<u32> {
    log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

#[tokio::test]
async fn an_executor_serves_its_handlers_queues_unless_told_otherwise() -> Result<()> {
    let store = MemoryStorage::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let ex = builder(store.clone()).handler(recorder("mail", "emails", &log)).build().await?;
    let served: Vec<&str> = ex.queues().queues().map(|(q, _)| q.as_str()).collect();
    assert_eq!(served, ["default", "emails"], "default plus the handler's queue");
    let running = ex.start();
    let emails = TaskOptions::new().queue(QueueName::new("emails")?);
    let id = TaskBuilder::new("mail", 1u32, emails).submit(&ex).await?.id;
    let rec = finished(&ex, &id).await?;
    assert_eq!((rec.state, rec.queue.as_str()), (TaskState::Completed, "emails"));
    running.shutdown().await?;

    // An executor told to serve `other` only leaves both queues alone.
    let only = builder(store.clone())
        .handler(recorder("mail", "emails", &log))
        .handler(recorder("side", "other", &log))
        .queues([("other", 1)])
        .build()
        .await?;
    let running = only.start();
    let left = TaskBuilder::new("mail", 2u32, TaskOptions::new().queue(QueueName::new("emails")?))
        .submit(&only)
        .await?
        .id;
    let plain = TaskBuilder::new("mail", 3u32, TaskOptions::new()).submit(&only).await?.id;
    let side = TaskBuilder::new("side", 4u32, TaskOptions::new().queue(QueueName::new("other")?))
        .submit(&only)
        .await?
        .id;
    finished(&only, &side).await?;
    // The served queue's task, submitted last, is done: the others were
    // passed over by every claim since, not merely not reached yet.
    for id in [&left, &plain] {
        assert_eq!(
            only.status(id).await?.map(|r| r.state),
            Some(TaskState::Created),
            "{id} is not served here"
        );
    }
    running.shutdown().await?;
    assert_eq!(starts(&log), [1, 4]);
    Ok(())
}

#[tokio::test]
async fn pause_stops_every_process_and_resume_restarts_in_priority_order() -> Result<()> {
    let store = MemoryStorage::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    // Two processes on one store, one slot each, so starts are serial.
    let a = builder(store.clone())
        .handler(recorder("job", "work", &log))
        .handler(recorder("ping", "fast", &log))
        .concurrency(1)
        .build()
        .await?;
    let b = builder(store.clone())
        .handler(recorder("job", "work", &log))
        .handler(recorder("ping", "fast", &log))
        .concurrency(1)
        .build()
        .await?;
    let client = a.client().clone();
    client.pause_queue("work").await?;
    let (ra, rb) = (a.start(), b.start());
    let work = TaskOptions::new().queue(QueueName::new("work")?);
    let mut ids = Vec::new();
    for (n, priority) in [(10, 0), (11, 9), (12, 5), (13, 9), (14, 1)] {
        ids.push(TaskBuilder::new("job", n, work.clone()).priority(priority).submit(&client).await?.id);
    }
    // The other queue keeps the full rate while `work` is paused.
    let fast = TaskBuilder::new("ping", 1u32, TaskOptions::new().queue(QueueName::new("fast")?))
        .submit(&client)
        .await?
        .id;
    finished(&a, &fast).await?;
    for id in &ids {
        assert_eq!(
            client.status(id).await?.map(|r| r.state),
            Some(TaskState::Created),
            "{id} ran while paused"
        );
    }
    let info = client.queues().await?;
    assert!(info.iter().any(|q| q.queue.as_str() == "work" && q.paused && q.waiting == 5), "{info:?}");
    rb.shutdown().await?;
    client.resume_queue("work").await?;
    for id in &ids {
        wait_state(&a, id, TaskState::Completed).await?;
    }
    ra.shutdown().await?;
    let order = starts(&log);
    assert_eq!(order, [1, 11, 13, 12, 14, 10], "priority 9, 9, 5, 1, 0; equal ones in submission order");
    Ok(())
}

#[tokio::test]
async fn strict_queues_drain_in_order_and_bad_sets_fail_the_build() -> Result<()> {
    let store = MemoryStorage::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let ex = builder(store.clone())
        .handler(recorder("job", "high", &log))
        .strict_queues(["high", "low"])
        .concurrency(1)
        .build()
        .await?;
    let client = ex.client().clone();
    client.pause_queue("high").await?;
    client.pause_queue("low").await?;
    for (n, q) in [(1u32, "low"), (2, "high"), (3, "low"), (4, "high")] {
        TaskBuilder::new("job", n, TaskOptions::new().queue(QueueName::new(q)?)).submit(&client).await?;
    }
    client.resume_queue("low").await?;
    client.resume_queue("high").await?;
    let running = ex.start();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while starts(&log).len() < 4 {
        if tokio::time::Instant::now() > deadline {
            return Err(unexpected(format!("only {:?} ran", starts(&log))));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    running.shutdown().await?;
    assert_eq!(starts(&log), [2, 4, 1, 3], "every `high` task before any `low` one");

    for bad in [
        builder(MemoryStorage::new()).queues([("a", 0)]),
        builder(MemoryStorage::new()).queues([("a b", 1)]),
        builder(MemoryStorage::new()).strict_queues(["a", "a"]),
        builder(MemoryStorage::new()).strict_queues(Vec::<&str>::new()),
    ] {
        assert!(bad.build().await.is_err(), "a bad queue set must fail the build");
    }
    Ok(())
}
