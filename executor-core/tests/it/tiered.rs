//! TieredStorage on two memory stores: routing, promotion, crash between the
//! two steps of a move, far retries going cold, one view of each task.

use std::time::Duration;

use reliable_executor::{
    Executor, Handler, MemoryStorage, Namespace, Result, TaskBuilder, TaskContext, TaskError, TaskOptions,
    TaskState, TieredStorage, WorkerId,
    attempt_log::AttemptOutcome,
    query::CancelOutcome,
    queue::ClaimPlan,
    storage::{Finish, Storage, TierStorage},
    testing,
};

type Tiered = TieredStorage<MemoryStorage, MemoryStorage>;

fn tiered() -> Tiered {
    TieredStorage::new(MemoryStorage::new(), MemoryStorage::new()).horizon(Duration::from_secs(60))
}

fn task(id: &str, delay_secs: u64) -> reliable_executor::storage::NewTask {
    let mut t = testing::new_task(id);
    t.due = reliable_executor::storage::Due::After(Duration::from_secs(delay_secs));
    t
}

#[tokio::test(start_paused = true)]
async fn submit_routes_by_due_time_and_ids_are_unique_across_tiers() -> Result<()> {
    let s = tiered();
    let ns = Namespace::new("t")?;
    s.submit(&ns, task("soon", 10)).await?;
    s.submit(&ns, task("later", 3_600)).await?;
    assert!(s.hot().get(&ns, &"soon".try_into()?).await?.is_some());
    assert!(s.cold().get(&ns, &"later".try_into()?).await?.is_some());
    assert!(s.hot().get(&ns, &"later".try_into()?).await?.is_none());
    // One view: status, counts and duplicates span both tiers.
    assert_eq!(s.get(&ns, &"later".try_into()?).await?.map(|r| r.state), Some(TaskState::Created));
    assert_eq!(s.counts(&ns).await?.get(TaskState::Created), 2);
    let dup = s.submit(&ns, task("later", 5)).await;
    assert!(matches!(dup, Err(reliable_executor::Error::DuplicateId(_))), "{dup:?}");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn promotion_moves_tasks_entering_the_horizon_once() -> Result<()> {
    let s = tiered();
    let ns = Namespace::new("t")?;
    for i in 0..10 {
        s.submit(&ns, task(&format!("p{i}"), 120 + i)).await?;
    }
    assert_eq!(s.promote(&ns).await?, 0, "nothing is within the horizon yet");
    tokio::time::advance(Duration::from_secs(65)).await;
    let moved = s.promote(&ns).await?;
    assert_eq!(moved, 5, "tasks due before now + 60 s (120..124 s) moved");
    assert_eq!(s.hot().counts(&ns).await?.total(), 5);
    assert_eq!(s.cold().counts(&ns).await?.total(), 5);
    assert_eq!(s.promote(&ns).await?, 0, "a second pass moves nothing new");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_crash_between_insert_and_delete_neither_loses_nor_duplicates() -> Result<()> {
    let s = tiered();
    let ns = Namespace::new("t")?;
    s.submit(&ns, task("fragile", 90)).await?;
    tokio::time::advance(Duration::from_secs(40)).await;
    s.crash_after(testing::PromoteStep::Inserted);
    assert!(s.promote(&ns).await.is_err(), "the injected crash stops the promoter");
    // Both tiers hold it now; the next run finishes the move.
    assert!(s.hot().get(&ns, &"fragile".try_into()?).await?.is_some());
    assert!(s.cold().get(&ns, &"fragile".try_into()?).await?.is_some());
    assert_eq!(s.promote(&ns).await?, 1);
    assert!(s.cold().get(&ns, &"fragile".try_into()?).await?.is_none());
    tokio::time::advance(Duration::from_secs(60)).await;
    let w = WorkerId::generate();
    let claimed = s.claim(&ns, &w, &ClaimPlan::default_queue(10), Duration::from_secs(30)).await?;
    assert_eq!(claimed.len(), 1, "exactly one copy runs");
    assert_eq!(s.claim(&ns, &w, &ClaimPlan::default_queue(10), Duration::from_secs(30)).await?.len(), 0);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_retry_past_the_horizon_goes_cold_and_comes_back() -> Result<()> {
    let s = tiered();
    let ns = Namespace::new("t")?;
    s.submit(&ns, task("retry", 0)).await?;
    let w = WorkerId::generate();
    let lease =
        s.claim(&ns, &w, &ClaimPlan::default_queue(1), Duration::from_secs(30)).await?.remove(0).lease();
    let lease = lease.ok_or_else(|| reliable_executor::Error::invalid("test", "no lease"))?;
    let state = s
        .finish(&ns, &lease, Finish::Retry { delay: Duration::from_secs(600), error: "later".into() })
        .await?;
    assert_eq!(state, TaskState::Pending);
    assert!(s.hot().get(&ns, &lease.id).await?.is_none(), "far retry left hot");
    let cold = s
        .cold()
        .get(&ns, &lease.id)
        .await?
        .ok_or_else(|| reliable_executor::Error::NotFound(lease.id.clone()))?;
    assert_eq!((cold.state, cold.attempts), (TaskState::Pending, 1));
    let logged: Vec<_> = cold.attempt_log.iter().map(|a| (a.attempt, a.outcome, a.error.clone())).collect();
    assert_eq!(logged, [(1, AttemptOutcome::Failed, Some("later".to_owned()))], "the log went cold too");
    // A near retry stays hot.
    s.submit(&ns, task("near", 0)).await?;
    let l2 = s.claim(&ns, &w, &ClaimPlan::default_queue(1), Duration::from_secs(30)).await?.remove(0).lease();
    let l2 = l2.ok_or_else(|| reliable_executor::Error::invalid("test", "no lease"))?;
    s.finish(&ns, &l2, Finish::Retry { delay: Duration::from_secs(5), error: "soon".into() }).await?;
    assert!(s.hot().get(&ns, &l2.id).await?.is_some());
    tokio::time::advance(Duration::from_secs(560)).await;
    assert_eq!(s.promote(&ns).await?, 1, "the far retry comes back within the horizon");
    let back = s.hot().get(&ns, &lease.id).await?.map(|r| r.attempt_log).unwrap_or_default();
    assert_eq!(back, cold.attempt_log, "and came back hot with it");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn cancel_and_list_see_cold_tasks() -> Result<()> {
    let s = tiered();
    let ns = Namespace::new("t")?;
    s.submit(&ns, task("c1", 3_600)).await?;
    s.submit(&ns, task("h1", 1)).await?;
    assert_eq!(s.cancel(&ns, &"c1".try_into()?).await?, CancelOutcome::Cancelled);
    assert_eq!(s.get(&ns, &"c1".try_into()?).await?.map(|r| r.state), Some(TaskState::Cancelled));
    let page = s.list(&ns, reliable_executor::ListQuery::new(TaskState::Cancelled, 10)).await?;
    assert_eq!(page.tasks.len(), 1);
    Ok(())
}

/// End to end: an executor on tiered storage runs a far task after promotion,
/// and a handler's far retry goes cold and comes back.
#[tokio::test(start_paused = true)]
async fn an_executor_runs_far_tasks_after_promotion() -> Result<()> {
    let s = tiered();
    let handler = Handler::new("far", |_: (), ctx: TaskContext| async move {
        if ctx.attempt() == 1 {
            Err(TaskError::retry_after("try much later", Duration::from_secs(300)))
        } else {
            Ok(())
        }
    });
    let ex = Executor::builder(s.clone()).namespace("t").handler(handler).build().await?;
    let running = ex.start();
    let id =
        TaskBuilder::new("far", (), TaskOptions::new()).delay(Duration::from_secs(600)).submit(&ex).await?.id;
    let ns = Namespace::new("t")?;
    assert!(s.cold().get(&ns, &id).await?.is_some(), "far task submitted cold");
    let done = ex.wait_for(&id, Duration::from_secs(3_600)).await?;
    assert_eq!((done.state, done.attempts), (TaskState::Completed, 2));
    let ran_late = done.finished_at.unwrap_or_default().since(done.created_at);
    assert!(ran_late >= Duration::from_secs(900), "600 s delay plus 300 s retry: {ran_late:?}");
    assert!(s.cold().get(&ns, &id).await?.is_none(), "nothing left behind in cold");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn submit_many_routes_each_task_and_answers_in_order() -> Result<()> {
    let s = tiered();
    let ns = Namespace::new("t")?;
    s.submit(&ns, task("taken", 3_600)).await?;
    let batch = vec![task("a", 1), task("b", 3_600), task("taken", 1), task("c", 7_200)];
    let results = s.submit_many(&ns, batch).await?;
    let ok: Vec<bool> = results.iter().map(Result::is_ok).collect();
    assert_eq!(ok, [true, true, false, true], "{results:?}");
    assert!(matches!(results[2], Err(reliable_executor::Error::DuplicateId(_))), "duplicate across tiers");
    assert_eq!(s.hot().counts(&ns).await?.total(), 1);
    assert_eq!(s.cold().counts(&ns).await?.total(), 3);

    // Idempotent: an id held by the other tier answers Existing; a repeat
    // inside the batch is the tier's own duplicate.
    let mut again = task("taken", 1);
    again.mode = reliable_executor::storage::SubmitMode::Idempotent;
    let batch = vec![again, task("d", 1), task("d", 1), task("e", 3_600)];
    let results = s.submit_many(&ns, batch).await?;
    assert!(
        matches!(&results[0], Ok(r) if r.outcome == reliable_executor::SubmitOutcome::Existing),
        "{results:?}"
    );
    assert!(results[1].is_ok() && results[3].is_ok(), "{results:?}");
    assert!(matches!(results[2], Err(reliable_executor::Error::DuplicateId(_))), "{results:?}");
    assert_eq!(s.hot().counts(&ns).await?.total(), 2, "a and d");
    assert_eq!(s.cold().counts(&ns).await?.total(), 4, "taken, b, c and e");
    Ok(())
}

/// Refuses to import one id, as a hot store refuses a damaged cold record.
#[derive(Debug)]
struct RefuseImport(&'static str);

impl reliable_executor::testing::Intercept<MemoryStorage> for RefuseImport {
    async fn import(
        &self,
        inner: &MemoryStorage,
        ns: &Namespace,
        record: reliable_executor::TaskRecord,
    ) -> Result<bool> {
        if record.id.as_str() == self.0 {
            return Err(reliable_executor::Error::invalid("fence", "out of this store's range"));
        }
        inner.import(ns, record).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_cold_task_the_hot_store_refuses_does_not_stop_the_others() -> Result<()> {
    let hot = reliable_executor::testing::Intercepted::new(MemoryStorage::new(), RefuseImport("p0"));
    let s = TieredStorage::new(hot, MemoryStorage::new()).horizon(Duration::from_secs(60));
    let ns = Namespace::new("t")?;
    for i in 0..5 {
        s.submit(&ns, task(&format!("p{i}"), 120 + i)).await?;
    }
    tokio::time::advance(Duration::from_secs(130)).await;
    assert_eq!(s.promote(&ns).await?, 4, "every task but the refused one moved");
    assert_eq!(s.cold().counts(&ns).await?.total(), 1, "the refused task stays cold, not lost");
    assert!(s.cold().get(&ns, &"p0".try_into()?).await?.is_some());
    Ok(())
}

/// A promoted task ends an idle claimer's 60 s wait when it falls due.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_promoted_task_wakes_an_idle_claimer() {
    let tiered =
        TieredStorage::new(MemoryStorage::new(), MemoryStorage::new()).horizon(Duration::from_secs(1));
    let ns = reliable_executor::testing::unique_namespace("tier-wake");
    reliable_executor::testing::tiered_promotion_wakes_claimers(&tiered, &ns).await;
}
