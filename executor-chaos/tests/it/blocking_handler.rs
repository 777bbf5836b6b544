//! A handler that ignores cancellation and blocks its thread past its lease
//! (`std::thread::sleep` on a single-threaded runtime, so the heartbeat is
//! blocked too, as on a starved machine): the task is re-run by another
//! worker after the lease, and the blocked attempt's late result is refused.

use std::time::Duration;

use executor_chaos::{ledger::Event, process::TempDir, store::ChaosStore, worker::TASK_NAME};
use executor_core::{
    Namespace, TaskId, TaskState,
    storage::{NewTask, Storage},
};
use executor_redis::RedisStorage;

use crate::common::{self, TestResult, events, spawn_worker, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_handler_is_rerun_elsewhere_and_its_late_result_refused() -> TestResult {
    let _one = crate::common::one_at_a_time_async().await;
    let url = common::redis_url();
    let storage = RedisStorage::connect_once(&url).await.map_err(|e| {
        format!("Redis at {url} does not answer ({e}); start it with `redis-server --daemonize yes` or scripts/test.sh")
    })?;
    let ns_text = common::unique_ns("blocked");
    let ns = Namespace::new(ns_text.clone())?;
    let dir = TempDir::new("chaos-blocked")?;
    let base = |ledger: &str| {
        vec![
            "--storage".to_owned(),
            "redis".to_owned(),
            "--url".to_owned(),
            url.clone(),
            "--ns".to_owned(),
            ns_text.clone(),
            "--ledger".to_owned(),
            dir.path().join(ledger).display().to_string(),
            "--lease-ms".to_owned(),
            "1000".to_owned(),
            "--concurrency".to_owned(),
            "1".to_owned(),
        ]
    };
    let mut a_args = base("a.log");
    a_args.extend(["--block-ms", "5000", "--current-thread"].map(str::to_owned));
    let a_refs: Vec<&str> = a_args.iter().map(String::as_str).collect();
    let mut a = spawn_worker(&[], &a_refs, &dir.path().join("a.out"))?;
    wait_for(Duration::from_secs(20), || {
        events(dir.path()).iter().any(|e| matches!(e, Event::Up { .. })).then_some(())
    })
    .ok_or("worker A did not start")?;

    let id = TaskId::new("blocked-task")?;
    storage
        .submit(&ns, {
            let mut t = NewTask::new(id.clone(), TASK_NAME.to_owned(), b"1".to_vec());
            t.max_attempts = 10;
            t
        })
        .await?;
    let first = wait_for(Duration::from_secs(10), || {
        events(dir.path()).iter().find_map(|e| match e {
            Event::Start { fence, t, pid, .. } if *pid == a.pid() => Some((*fence, *t)),
            _ => None,
        })
    })
    .ok_or("worker A never started the task")?;

    let b_args = base("b.log");
    let b_refs: Vec<&str> = b_args.iter().map(String::as_str).collect();
    let mut b = spawn_worker(&[], &b_refs, &dir.path().join("b.out"))?;

    let mut record = None;
    for _ in 0..200 {
        let r = storage.get(&ns, &id).await?;
        if r.as_ref().is_some_and(|r| r.state == TaskState::Completed) {
            record = r;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let record = record.ok_or("the task was not completed by worker B within 10 s")?;
    let second = events(dir.path())
        .iter()
        .find_map(|e| match e {
            Event::Start { fence, t, pid, .. } if *pid == b.pid() => Some((*fence, *t)),
            _ => None,
        })
        .ok_or("worker B has no start in its ledger")?;
    println!(
        "A started fence {} at {}; B re-ran it as fence {} {} ms later",
        first.0,
        first.1,
        second.0,
        second.1 - first.1
    );
    assert!(second.0 > first.0, "B's fence {} must be above A's {}", second.0, first.0);
    assert!(second.1 - first.1 >= 1_000, "re-run before A's lease could expire");
    assert_eq!(record.fence, second.0, "the final record must be B's attempt");

    // A wakes up after 5 s; its result must be refused or never written.
    wait_for(Duration::from_secs(15), || {
        events(dir.path())
            .iter()
            .any(|e| matches!(e, Event::End { pid, .. } | Event::Abort { pid, .. } if *pid == a.pid()))
            .then_some(())
    })
    .ok_or("worker A never came back from its blocked handler")?;
    // A's runtime then either writes its late finish (refused) or learns from
    // its heartbeat that the lease is lost and skips the write: wait for one.
    wait_for(Duration::from_secs(10), || {
        events(dir.path())
            .iter()
            .any(|e| match e {
                Event::Finish { pid, fence, .. } => *pid == a.pid() && *fence == first.0,
                Event::Lost { pid, tasks, .. } => *pid == a.pid() && tasks.iter().any(|t| t == id.as_str()),
                _ => false,
            })
            .then_some(())
    })
    .ok_or("worker A neither wrote its late finish nor saw its lease lost")?;
    let late = events(dir.path());
    let a_finish: Vec<&String> = late
        .iter()
        .filter_map(|e| match e {
            Event::Finish { pid, fence, result, .. } if *pid == a.pid() && *fence == first.0 => Some(result),
            _ => None,
        })
        .collect();
    println!(
        "A's late finish writes: {a_finish:?} (none: the runtime saw the lease lost and skipped the write)"
    );
    assert!(a_finish.iter().all(|r| !r.starts_with("ok:")), "A's stale write was accepted: {a_finish:?}");
    let after = storage.get(&ns, &id).await?.ok_or("task vanished")?;
    assert_eq!((after.state, after.fence), (TaskState::Completed, second.0));
    a.stop(Duration::from_secs(5));
    b.stop(Duration::from_secs(5));
    storage.purge(&ns).await?;
    Ok(())
}
