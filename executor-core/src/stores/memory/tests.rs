//! What the conformance suite cannot see: the clock under paused time, the
//! wake-ups, the payload limit, lock poisoning, isolation and parallel claims.

use std::{collections::HashSet, time::Duration};

use tokio::time::Instant;

use super::*;
use crate::{
    Error, TaskBuilder, TaskOptions,
    storage::{Due, SubmitMode},
};

fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap_or_default()
}

fn task(id: &str) -> NewTask {
    let mut t = NewTask {
        id: TaskId::generate(),
        name: "t".to_owned(),
        payload: b"{}".to_vec(),
        due: Due::Now,
        max_attempts: 3,
        max_duration: None,
        timeout: None,
        retry: None,
        mode: SubmitMode::Plain,
        queue: crate::QueueName::default(),
        priority: 0,
        nonce: crate::records::task::new_nonce(),
    };
    if let Ok(id) = TaskId::new(id) {
        t.id = id;
    }
    t
}

fn worker() -> WorkerId {
    WorkerId::generate()
}

#[tokio::test(start_paused = true)]
async fn clock_follows_paused_time() {
    let store = MemoryStorage::new();
    let t0 = store.now();
    tokio::time::advance(Duration::from_millis(1_500)).await;
    assert_eq!(store.now().since(t0), Duration::from_millis(1_500));
    let wall = Timestamp::now_system();
    assert!(
        t0.since(wall) < Duration::from_secs(5) && wall.since(t0) < Duration::from_secs(5),
        "{t0} vs {wall}"
    );
}

#[tokio::test(start_paused = true)]
async fn due_times_and_leases_follow_paused_time() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("paused");
    let mut t = task("later");
    t.due = Due::After(Duration::from_secs(10));
    store.submit(&ns, t).await?;
    assert!(
        store.claim(&ns, &worker(), &ClaimPlan::default_queue(10), Duration::from_secs(1)).await?.is_empty()
    );
    tokio::time::advance(Duration::from_secs(10)).await;
    let claimed = store.claim(&ns, &worker(), &ClaimPlan::default_queue(10), Duration::from_secs(1)).await?;
    assert_eq!(claimed.len(), 1);
    tokio::time::advance(Duration::from_millis(1_000)).await;
    assert!(store.reap(&ns, 10).await?.is_empty(), "a lease is live until its last millisecond");
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(store.reap(&ns, 10).await?.retried.len(), 1);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn wait_for_work_wakes_on_submit() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("wake-submit");
    let submitter = {
        let (store, ns) = (store.clone(), ns.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            store.submit(&ns, task("now")).await
        })
    };
    let start = Instant::now();
    store.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(60)).await?;
    assert_eq!(start.elapsed(), Duration::from_secs(1), "woken by the submit, not by max_wait");
    submitter.await.map_err(|e| Error::storage(e, false))??;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn wait_for_work_wakes_at_the_due_time() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("wake-due");
    let mut t = task("later");
    t.due = Due::After(Duration::from_secs(10));
    store.submit(&ns, t).await?;
    let start = Instant::now();
    store.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(60)).await?;
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    assert_eq!(
        store.claim(&ns, &worker(), &ClaimPlan::default_queue(1), Duration::from_secs(5)).await?.len(),
        1
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn wait_for_work_returns_at_once_when_due_and_never_after_max_wait() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("wake-bounds");
    let start = Instant::now();
    store.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(3)).await?;
    assert_eq!(start.elapsed(), Duration::from_secs(3), "an empty store waits max_wait");
    let mut t = task("far");
    t.due = Due::After(Duration::from_secs(3_600));
    store.submit(&ns, t).await?;
    let start = Instant::now();
    store.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(3)).await?;
    assert_eq!(start.elapsed(), Duration::from_secs(3), "a far due time does not extend max_wait");
    store.submit(&ns, task("now")).await?;
    let start = Instant::now();
    store.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(3)).await?;
    assert_eq!(start.elapsed(), Duration::ZERO, "due work returns at once");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn wait_for_work_wakes_on_retry_requeue_and_release() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("wake-others");
    store.submit(&ns, task("a")).await?;
    let lease =
        store.claim(&ns, &worker(), &ClaimPlan::default_queue(1), Duration::from_secs(60)).await?.remove(0);
    let lease = lease.lease().ok_or(Error::invalid("lease", "claimed task has none"))?;
    let finisher = {
        let (store, ns) = (store.clone(), ns.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            store.finish(&ns, &lease, Finish::Released).await
        })
    };
    let start = Instant::now();
    store.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(60)).await?;
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    assert_eq!(finisher.await.map_err(|e| Error::storage(e, false))??, TaskState::Pending);
    Ok(())
}

#[tokio::test]
async fn payload_limit_is_one_setting_and_the_store_cap_applies_when_lower() -> Result<()> {
    let ns = ns("payload");
    let store = MemoryStorage::new();
    // The store's own cap is its hard limit, not the user's setting: a
    // payload past the default setting still fits in the store.
    assert_eq!(store.max_payload().await?, MemoryStorage::MAX_PAYLOAD);
    let mut t = task("past-default");
    t.payload = vec![b'1'; crate::client::DEFAULT_MAX_PAYLOAD + 1];
    store.submit(&ns, t.clone()).await?;
    // The client applies the setting (default 1 MiB)...
    let client = crate::Client::without_name_check(store.clone(), ns.clone());
    assert_eq!(client.payload_limit().await?, crate::client::DEFAULT_MAX_PAYLOAD);
    t.id = TaskId::new("over-default")?;
    let err = crate::Submit::submit_new(&client, t.clone()).await.err();
    assert!(
        matches!(err, Some(Error::PayloadTooLarge { size, limit })
            if size == crate::client::DEFAULT_MAX_PAYLOAD + 1 && limit == crate::client::DEFAULT_MAX_PAYLOAD),
        "{err:?}"
    );
    // ...set lower, or set above the store's cap, where the store's applies.
    let small = client.clone().max_payload(10);
    t.payload = b"\"123456789\"".to_vec();
    let err = crate::Submit::submit_new(&small, t.clone()).await.err();
    assert!(matches!(err, Some(Error::PayloadTooLarge { size: 11, limit: 10 })), "{err:?}");
    let huge = client.max_payload(usize::MAX);
    assert_eq!(huge.payload_limit().await?, MemoryStorage::MAX_PAYLOAD);
    Ok(())
}

#[tokio::test]
async fn bad_input_is_refused_not_stored() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("bad-input");
    let mut t = task("zero");
    t.max_attempts = 0;
    assert!(matches!(store.submit(&ns, t).await, Err(Error::Invalid { .. })));
    assert_eq!(store.counts(&ns).await?.total(), 0);
    for limit in [0, 1_001] {
        let q = ListQuery::new(TaskState::Created, limit);
        assert!(matches!(store.list(&ns, q).await, Err(Error::Invalid { .. })), "page size {limit}");
    }
    Ok(())
}

#[tokio::test]
async fn namespaces_are_isolated_and_removable() -> Result<()> {
    let store = MemoryStorage::new();
    let (a, b) = (ns("a"), ns("b"));
    let task = TaskBuilder::new("t", 1, TaskOptions::new()).id("same").into_new_task()?;
    store.submit(&a, task.clone()).await?;
    store.submit(&b, task.clone()).await?;
    assert_eq!(
        store.claim(&a, &worker(), &ClaimPlan::default_queue(10), Duration::from_secs(5)).await?.len(),
        1
    );
    assert_eq!(store.get(&b, &task.id).await?.map(|t| t.state), Some(TaskState::Created));
    store.remove_namespace(&a);
    assert!(store.get(&a, &task.id).await?.is_none());
    assert!(store.get(&b, &task.id).await?.is_some());
    Ok(())
}

#[tokio::test]
async fn a_poisoned_lock_does_not_panic_later_calls() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("poison");
    store.submit(&ns, task("before")).await?;
    let space = store.namespace(&ns);
    let poisoner = std::thread::spawn(move || {
        let _guard = space.lock();
        panic!("poisoning the namespace lock on purpose");
    });
    assert!(poisoner.join().is_err());
    assert!(store.namespace(&ns).space.is_poisoned());
    store.submit(&ns, task("after")).await?;
    assert_eq!(store.counts(&ns).await?.get(TaskState::Created), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_claimers_on_threads_never_share_a_task() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("parallel");
    let tasks = (0..4_000).map(|i| task(&format!("t{i}"))).collect();
    assert!(store.submit_many(&ns, tasks).await?.iter().all(Result::is_ok));
    let mut claimers = Vec::new();
    for _ in 0..8 {
        let (store, ns) = (store.clone(), ns.clone());
        claimers.push(tokio::spawn(async move {
            let me = worker();
            let mut mine = Vec::new();
            loop {
                let batch =
                    store.claim(&ns, &me, &ClaimPlan::default_queue(16), Duration::from_secs(60)).await?;
                if batch.is_empty() {
                    return Ok::<_, Error>(mine);
                }
                mine.extend(batch.into_iter().map(|t| t.id));
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut seen = HashSet::new();
    for c in claimers {
        for id in c.await.map_err(|e| Error::storage(e, false))?? {
            assert!(seen.insert(id.clone()), "{id} claimed twice");
        }
    }
    assert_eq!(seen.len(), 4_000);
    assert_eq!(store.counts(&ns).await?.get(TaskState::Running), 4_000);
    Ok(())
}

#[tokio::test]
async fn a_debounce_key_stays_unbound_after_its_task_is_retried() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("debounce-retry");
    let debounced = |id: &str| {
        let mut t = task(id);
        t.mode = SubmitMode::Debounce(crate::storage::Debounce {
            key: "k".to_owned(),
            window: Duration::ZERO,
            max_wait: None,
        });
        t
    };
    store.submit(&ns, debounced("first")).await?;
    let rec =
        store.claim(&ns, &worker(), &ClaimPlan::default_queue(1), Duration::from_secs(60)).await?.remove(0);
    let lease = rec.lease().ok_or(Error::invalid("lease", "claimed task has none"))?;
    let retry = Finish::Retry { delay: Duration::from_secs(60), error: "boom".to_owned() };
    store.finish(&ns, &lease, retry).await?;
    let again = store.submit(&ns, debounced("second")).await?;
    assert_eq!(again.outcome, crate::SubmitOutcome::Created, "the retried task no longer takes debounces");
    assert_eq!(again.id.as_str(), "second");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn extreme_due_times_and_waits_do_not_panic() -> Result<()> {
    let store = MemoryStorage::new();
    let ns = ns("extreme");
    let mut t = task("end-of-time");
    t.due = Due::At(Timestamp::MAX);
    t.max_duration = Some(crate::time::MAX_DURATION);
    store.submit(&ns, t).await?;
    let start = Instant::now();
    store.wait_for_work(&ns, &[QueueName::default()], Duration::from_secs(1)).await?;
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    let submitter = {
        let (store, ns) = (store.clone(), ns.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            store.submit(&ns, task("now")).await
        })
    };
    store.wait_for_work(&ns, &[QueueName::default()], Duration::MAX).await?;
    assert_eq!(start.elapsed(), Duration::from_secs(6), "an endless wait still wakes on submit");
    submitter.await.map_err(|e| Error::storage(e, false))??;
    let claimed = store.claim(&ns, &worker(), &ClaimPlan::default_queue(10), Duration::MAX).await?;
    assert_eq!(claimed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["now"]);
    let lease = claimed[0].lease().ok_or(Error::invalid("lease", "claimed task has none"))?;
    store.heartbeat(&ns, &[lease], Duration::MAX).await?;
    assert!(store.reap(&ns, 10).await?.is_empty(), "a lease to the end of time never expires");
    Ok(())
}
