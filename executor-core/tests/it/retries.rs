//! Retry policies as the runtime applies them, on a paused clock.

use std::time::Duration;

use reliable_executor::{
    Handler, MemoryStorage, Result, RetryPolicy, TaskContext, TaskError, TaskOptions, TaskState,
};

use crate::support::{Timeline, assert_near, builder, finished, submit};

const SLACK: Duration = Duration::from_millis(600);

fn flaky(name: &str, timeline: Timeline, fail_times: usize, options: TaskOptions) -> Handler {
    Handler::new(name, move |_: (), _ctx: TaskContext| {
        let timeline = timeline.clone();
        async move { if timeline.mark() <= fail_times { Err(TaskError::retry("not yet")) } else { Ok(()) } }
    })
    .options(options)
}

#[tokio::test(start_paused = true)]
async fn fixed_interval_retries_then_completes() -> Result<()> {
    let timeline = Timeline::default();
    let opts = TaskOptions::new().retry_limit(3).retry(RetryPolicy::fixed(Duration::from_secs(2)));
    let ex = builder(MemoryStorage::new())
        .handler(flaky("flaky", timeline.clone(), 2, opts.clone()))
        .build()
        .await?;
    let running = ex.start();
    let id = submit(&ex, "flaky", (), opts).await?;
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Completed);
    assert_eq!(record.attempts, 3);
    assert_eq!(timeline.gaps().len(), 2);
    for gap in timeline.gaps() {
        assert_near(gap, Duration::from_secs(2), SLACK);
    }
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn exponential_backoff_doubles_up_to_the_cap() -> Result<()> {
    let timeline = Timeline::default();
    let policy = RetryPolicy::exponential(Duration::from_secs(1), 2.0, Duration::from_secs(4))?;
    let opts = TaskOptions::new().retry_limit(4).retry(policy);
    let ex = builder(MemoryStorage::new())
        .handler(flaky("exp", timeline.clone(), 10, opts.clone()))
        .build()
        .await?;
    let running = ex.start();
    let id = submit(&ex, "exp", (), opts).await?;
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Failed, "every attempt failed: dead letter");
    assert_eq!(record.attempts, 5);
    let gaps = timeline.gaps();
    let expected = [1, 2, 4, 4].map(Duration::from_secs);
    assert_eq!(gaps.len(), expected.len());
    for (gap, want) in gaps.iter().zip(expected) {
        assert_near(*gap, want, SLACK);
    }
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn levels_and_a_per_submit_override() -> Result<()> {
    let timeline = Timeline::default();
    let levels = RetryPolicy::levels([10, 60, 600].map(Duration::from_secs))?;
    let defaults = TaskOptions::new().retry_limit(3).retry(RetryPolicy::fixed(Duration::from_secs(1)));
    let ex = builder(MemoryStorage::new())
        .handler(flaky("lv", timeline.clone(), 3, defaults.clone()))
        .build()
        .await?;
    let running = ex.start();
    // The submit overrides the handler's fixed default with levels.
    let id = reliable_executor::TaskBuilder::new("lv", (), defaults).retry(levels).submit(&ex).await?.id;
    let record = ex.wait_for(&id, Duration::from_secs(3_600)).await?;
    assert_eq!(record.state, TaskState::Completed);
    let gaps = timeline.gaps();
    assert_eq!(gaps.len(), 3);
    for (gap, want) in gaps.iter().zip([10, 60, 600].map(Duration::from_secs)) {
        assert_near(*gap, want, SLACK);
    }
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn custom_default_policy_and_retry_after() -> Result<()> {
    let timeline = Timeline::default();
    let custom = RetryPolicy::custom("thrice", |n| Duration::from_secs(3 * u64::from(n)));
    let opts = TaskOptions::new().retry_limit(3).retry(custom);
    let t = timeline.clone();
    let handler = Handler::new("custom", move |_: (), ctx: TaskContext| {
        let t = t.clone();
        async move {
            t.mark();
            match ctx.attempt() {
                1 | 2 => Err(TaskError::retry("again")),
                3 => Err(TaskError::retry_after("rate limited", Duration::from_secs(30))),
                _ => Ok(()),
            }
        }
    })
    .options(opts.clone());
    let ex = builder(MemoryStorage::new()).handler(handler).build().await?;
    let running = ex.start();
    let id = submit(&ex, "custom", (), opts).await?;
    assert_eq!(finished(&ex, &id).await?.state, TaskState::Completed);
    let gaps = timeline.gaps();
    assert_eq!(gaps.len(), 3);
    for (gap, want) in gaps.iter().zip([3, 6, 30].map(Duration::from_secs)) {
        assert_near(*gap, want, SLACK);
    }
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn abort_skips_the_remaining_retries() -> Result<()> {
    let handler = Handler::new("abort", |_: (), _ctx: TaskContext| async {
        Err::<(), _>(TaskError::abort("card declined"))
    });
    let ex = builder(MemoryStorage::new()).handler(handler).build().await?;
    let running = ex.start();
    let id = submit(&ex, "abort", (), TaskOptions::new().retry_limit(5)).await?;
    let record = finished(&ex, &id).await?;
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.attempts, 1);
    assert_eq!(record.last_error.as_deref(), Some("card declined"));
    running.shutdown().await?;
    Ok(())
}
