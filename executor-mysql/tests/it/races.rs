//! Concurrency against a real server: many claimers with no lock error
//! reaching the caller, and the debounce upsert racing a claim of the same
//! task.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use executor_core::{
    SubmitOutcome, TaskId, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Debounce, Finish, NewTask, Storage, SubmitMode},
    testing,
};
use tokio::time::Instant;

use crate::support::{cleanup, fresh, storage};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TASKS: usize = 3_000;
const CLAIMERS: usize = 8;

/// Eight claimers on their own pools plus a reaper, all on one namespace:
/// every task is claimed once and completed once, and no call returns an
/// error (deadlocks and lock-wait timeouts are retried inside the store).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claimers_see_no_lock_errors() -> TestResult {
    let _serial = crate::support::serial().await;
    let (admin, ns) = fresh().await;
    let tasks: Vec<NewTask> = (0..TASKS).map(|i| testing::new_task(&format!("t{i}"))).collect();
    for r in admin.submit_many(&ns, tasks).await? {
        r?;
    }
    let started = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..CLAIMERS {
        let (s, ns) = (storage().await, ns.clone());
        handles.push(tokio::spawn(async move {
            let me = WorkerId::generate();
            let mut mine = Vec::new();
            loop {
                let batch = s.claim(&ns, &me, &ClaimPlan::default_queue(16), Duration::from_secs(60)).await?;
                if batch.is_empty() {
                    if s.counts(&ns).await?.get(TaskState::Created) == 0 {
                        return Ok::<_, executor_core::Error>(mine);
                    }
                    continue;
                }
                let items = batch.iter().filter_map(|t| t.lease()).map(|l| (l, Finish::Completed)).collect();
                for r in s.finish_many(&ns, items).await? {
                    r?;
                }
                mine.extend(batch.into_iter().map(|t| t.id));
            }
        }));
    }
    let reaper = {
        let (s, ns) = (Arc::new(storage().await), ns.clone());
        tokio::spawn(async move {
            for _ in 0..200 {
                s.reap(&ns, 100).await?;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok::<_, executor_core::Error>(())
        })
    };
    let mut seen = HashSet::new();
    for h in handles {
        for id in h.await?? {
            assert!(seen.insert(id.clone()), "{id} claimed twice");
        }
    }
    let elapsed = started.elapsed();
    reaper.await??;
    assert_eq!(seen.len(), TASKS);
    assert_eq!(admin.counts(&ns).await?.get(TaskState::Completed), TASKS as u64);
    eprintln!(
        "{CLAIMERS} claimers: {TASKS} tasks claimed and completed in {elapsed:?} ({:.0}/s)",
        TASKS as f64 / elapsed.as_secs_f64()
    );
    cleanup(&admin, &ns).await;
    Ok(())
}

fn debounced(id: &str, key: &str, n: usize) -> NewTask {
    let mut t = testing::new_task(id);
    t.payload = format!("{{\"n\":{n}}}").into_bytes();
    t.mode = SubmitMode::Debounce(Debounce::new(key.to_owned(), Duration::ZERO));
    t
}

/// A submitter debounces one key (window 0, so the task is due at once)
/// while a claimer claims it as fast as it can. Each task must then carry
/// the payload of the last submit that was told it landed on that task: a
/// `Debounced` answer is never lost to a claim that read the row first.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn debounce_upsert_races_a_claim() -> TestResult {
    let (s, ns) = fresh().await;
    let submits = 300;
    let done = Arc::new(AtomicBool::new(false));
    let claimer = {
        let (s, ns, done) = (storage().await, ns.clone(), Arc::clone(&done));
        tokio::spawn(async move {
            let me = WorkerId::generate();
            let mut claimed: HashMap<TaskId, Vec<u8>> = HashMap::new();
            loop {
                // Read before claiming: once the submitter is done, an empty
                // claim means nothing is left.
                let finished = done.load(Ordering::SeqCst);
                let batch = s.claim(&ns, &me, &ClaimPlan::default_queue(4), Duration::from_secs(60)).await?;
                if batch.is_empty() && finished {
                    return Ok::<_, executor_core::Error>(claimed);
                }
                for t in batch {
                    assert!(
                        claimed.insert(t.id.clone(), t.payload.clone()).is_none(),
                        "{} claimed twice",
                        t.id
                    );
                }
            }
        })
    };
    let mut last_for: HashMap<TaskId, usize> = HashMap::new();
    let (mut created, mut debounced_n) = (0, 0);
    for n in 0..submits {
        let out = s.submit(&ns, debounced(&format!("d{n}"), "the-key", n)).await?;
        match out.outcome {
            SubmitOutcome::Created => created += 1,
            SubmitOutcome::Debounced => debounced_n += 1,
            other => panic!("a debounce answers Created or Debounced, not {other:?}"),
        }
        last_for.insert(out.id, n);
    }
    done.store(true, Ordering::SeqCst);
    let claimed = claimer.await??;
    assert!(
        created > 1 && debounced_n > 0,
        "the race did not happen: {created} created, {debounced_n} debounced"
    );
    assert_eq!(claimed.len(), created, "every created task is claimed exactly once");
    for (id, n) in &last_for {
        let payload = claimed.get(id).map(|p| String::from_utf8_lossy(p).into_owned());
        assert_eq!(payload, Some(format!("{{\"n\":{n}}}")), "task {id} lost a debounced payload");
    }
    eprintln!("{submits} debounced submits: {created} tasks created, {debounced_n} coalesced");
    cleanup(&s, &ns).await;
    Ok(())
}
