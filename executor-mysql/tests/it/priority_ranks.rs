//! The claim reads the priority ranks where it recently found due tasks
//! with locks and looks at the others without (`claim.rs`, `RankHints`):
//! the priority order must hold whatever that hint says, when a higher
//! priority shows up after claims that only saw the default one, when it
//! goes away again, and under claimers whose hints differ; no task is
//! claimed twice when two claimers both find one by the lockless read.

use std::{collections::HashSet, time::Duration};

use executor_core::{
    TaskRecord, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, NewTask, Storage},
    testing,
};
use reliable_executor_mysql::MySqlStorage;

use crate::support::{cleanup, fresh, storage};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn task(id: &str, priority: u8) -> NewTask {
    let mut t = testing::new_task(id);
    t.priority = priority;
    t
}

async fn submit_all(s: &MySqlStorage, ns: &executor_core::Namespace, tasks: Vec<NewTask>) -> TestResult {
    for chunk in tasks.chunks(500) {
        for r in s.submit_many(ns, chunk.to_vec()).await? {
            r?;
        }
    }
    Ok(())
}

fn priorities(batch: &[TaskRecord]) -> Vec<u8> {
    batch.iter().map(|t| t.priority).collect()
}

/// One storage (one hint): claims that found only priority 0 learn to lock
/// that rank alone; priority 9 and 4 tasks submitted next are found by the
/// lockless read and claimed first, in priority then submission order;
/// after they are gone, and after their ranks are no longer read with
/// locks, a new priority 7 task is again claimed before the backlog.
#[tokio::test]
async fn a_higher_priority_arriving_later_is_claimed_first() -> TestResult {
    let (s, ns) = fresh().await;
    let me = WorkerId::new("ranks")?;
    let lease = Duration::from_secs(60);
    submit_all(&s, &ns, (0..200).map(|i| task(&format!("low-{i:03}"), 0)).collect()).await?;
    for _ in 0..3 {
        let batch = s.claim(&ns, &me, &ClaimPlan::default_queue(5), lease).await?;
        assert_eq!(priorities(&batch), vec![0; 5]);
    }
    let mut urgent: Vec<NewTask> = (0..4).map(|i| task(&format!("p9-{i}"), 9)).collect();
    urgent.extend((0..4).map(|i| task(&format!("p4-{i}"), 4)));
    submit_all(&s, &ns, urgent).await?;
    let batch = s.claim(&ns, &me, &ClaimPlan::default_queue(10), lease).await?;
    let ids: Vec<&str> = batch.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids[..8],
        ["p9-0", "p9-1", "p9-2", "p9-3", "p4-0", "p4-1", "p4-2", "p4-3"],
        "higher priorities first, then submission order: {ids:?}"
    );
    assert_eq!(priorities(&batch[8..]), vec![0, 0]);
    // Long enough for ranks 0 and 5 to be read without locks again.
    for _ in 0..20 {
        let batch = s.claim(&ns, &me, &ClaimPlan::default_queue(3), lease).await?;
        assert_eq!(priorities(&batch), vec![0; 3]);
    }
    submit_all(&s, &ns, vec![task("p7", 7)]).await?;
    let batch = s.claim(&ns, &me, &ClaimPlan::default_queue(4), lease).await?;
    assert_eq!(batch.first().map(|t| t.id.as_str()), Some("p7"));
    assert_eq!(priorities(&batch), vec![7, 0, 0, 0]);
    cleanup(&s, &ns).await;
    Ok(())
}

/// Six claimers with pools and hints of their own over 1,200 tasks of ten
/// priorities: each task is claimed exactly once, none is left waiting,
/// and each claim's batch comes in priority order (a claim sees every rank,
/// locked or not).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_priorities_under_concurrent_claimers_are_claimed_once() -> TestResult {
    let _serial = crate::support::serial().await;
    let (admin, ns) = fresh().await;
    let n = 1_200;
    let tasks: Vec<NewTask> =
        (0..n).map(|i| task(&format!("t{i:05}"), u8::try_from(i % 10).unwrap_or(0))).collect();
    submit_all(&admin, &ns, tasks).await?;
    let mut handles = Vec::new();
    for c in 0..6 {
        let (s, ns) = (storage().await, ns.clone());
        handles.push(tokio::spawn(async move {
            let me = WorkerId::new(format!("claimer-{c}"))?;
            let mut mine = Vec::new();
            loop {
                let batch = s.claim(&ns, &me, &ClaimPlan::default_queue(16), Duration::from_secs(60)).await?;
                if batch.is_empty() {
                    if s.counts(&ns).await?.get(TaskState::Created) == 0 {
                        return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(mine);
                    }
                    continue;
                }
                let p = priorities(&batch);
                assert!(p.windows(2).all(|w| w[0] >= w[1]), "a batch out of priority order: {p:?}");
                let items = batch.iter().filter_map(|t| t.lease()).map(|l| (l, Finish::Completed)).collect();
                for r in s.finish_many(&ns, items).await? {
                    r?;
                }
                mine.extend(batch.into_iter().map(|t| t.id));
            }
        }));
    }
    let mut seen = HashSet::new();
    for h in handles {
        for id in h.await?? {
            assert!(seen.insert(id.clone()), "{id} claimed twice");
        }
    }
    assert_eq!(seen.len(), n);
    assert_eq!(admin.counts(&ns).await?.get(TaskState::Completed), u64::try_from(n)?);
    cleanup(&admin, &ns).await;
    Ok(())
}
