//! Issue 12 item 3: one bad item of a batch fails nothing but itself.
//!
//! A handler answering `retry_after(Duration::MAX)` among 100 good tasks
//! made `now + delay` overflow a BIGINT (error 1690): the group-committed
//! batch failed as a whole, every task in it waited for the reaper, the
//! good handlers ran again, and a real TIMEOUT reason was replaced by
//! "lease expired". Now every item is validated first, and a batch
//! statement the server refuses for any reason (here a trigger that
//! refuses one row, standing for any error an item can meet) is redone
//! item by item.

use std::{sync::Arc, time::Duration};

use executor_core::{
    Error, SubmitOutcome, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Lease, NewTask, Storage},
    testing,
};
use reliable_executor_mysql::{MySqlOptions, MySqlStorage};

use crate::support::{EmptyDatabase, cleanup, fresh};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const GOOD: usize = 100;

async fn claim_all(s: &MySqlStorage, ns: &executor_core::Namespace, n: usize) -> Result<Vec<Lease>, Error> {
    let me = WorkerId::generate();
    let mut leases = Vec::new();
    while leases.len() < n {
        let batch =
            s.claim(ns, &me, &ClaimPlan::default_queue(n - leases.len()), Duration::from_secs(60)).await?;
        assert!(!batch.is_empty(), "only {} of {n} tasks claimed", leases.len());
        leases.extend(batch.iter().filter_map(|t| t.lease()));
    }
    Ok(leases)
}

/// Concurrent `finish` calls share one batch (group commit): the one whose
/// retry delay is out of range gets `Invalid`, the 100 others complete at
/// once, and the bad task keeps its lease (still RUNNING, nothing reaped).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_out_of_range_retry_fails_only_itself() -> TestResult {
    let (s, ns) = fresh().await;
    let s = Arc::new(s);
    let tasks: Vec<NewTask> = (0..=GOOD).map(|i| testing::new_task(&format!("g{i:03}"))).collect();
    for r in s.submit_many(&ns, tasks).await? {
        r?;
    }
    let leases = claim_all(&s, &ns, GOOD + 1).await?;
    let bad_id = leases[GOOD / 2].id.clone();
    let mut calls = Vec::new();
    for lease in leases.clone() {
        let (s, ns) = (Arc::clone(&s), ns.clone());
        let finish = if lease.id == bad_id {
            Finish::Retry { delay: Duration::MAX, error: "retry at the end of time".to_owned() }
        } else {
            Finish::Completed
        };
        calls.push(tokio::spawn(async move { (lease.id.clone(), s.finish(&ns, &lease, finish).await) }));
    }
    for call in calls {
        let (id, answer) = call.await?;
        if id == bad_id {
            assert!(matches!(answer, Err(Error::Invalid { .. })), "{id}: {answer:?}");
        } else {
            assert_eq!(answer?, TaskState::Completed, "{id}");
        }
    }
    let counts = s.counts(&ns).await?;
    assert_eq!(
        (counts.get(TaskState::Completed), counts.get(TaskState::Running)),
        (GOOD as u64, 1),
        "{counts:?}"
    );

    // The same through finish_many, with the bad item in the middle.
    let more: Vec<NewTask> = (0..=GOOD).map(|i| testing::new_task(&format!("m{i:03}"))).collect();
    for r in s.submit_many(&ns, more).await? {
        r?;
    }
    let leases = claim_all(&s, &ns, GOOD + 1).await?;
    let items: Vec<(Lease, Finish)> = leases
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let f = if i == GOOD / 2 {
                Finish::Retry { delay: Duration::MAX, error: "bad".to_owned() }
            } else {
                Finish::Completed
            };
            (l.clone(), f)
        })
        .collect();
    let answers = s.finish_many(&ns, items).await?;
    for (i, a) in answers.iter().enumerate() {
        if i == GOOD / 2 {
            assert!(matches!(a, Err(Error::Invalid { .. })), "item {i}: {a:?}");
        } else {
            assert!(matches!(a, Ok(TaskState::Completed)), "item {i}: {a:?}");
        }
    }
    // The bad task still holds its lease and can still time out with its
    // own reason (not "lease expired").
    let bad = leases[GOOD / 2].clone();
    let timeout = Finish::TimedOut { error: "ran past max_duration".to_owned() };
    assert_eq!(s.finish(&ns, &bad, timeout).await?, TaskState::Timeout);
    let rec = s.get(&ns, &bad.id).await?.ok_or("bad task gone")?;
    assert_eq!(rec.last_error.as_deref(), Some("ran past max_duration"));
    assert!(s.reap(&ns, 1000).await?.is_empty(), "nothing may be left for the reaper");
    cleanup(&s, &ns).await;
    Ok(())
}

/// A row the server refuses to change (a trigger raising an error for one
/// id) fails its item alone, in `finish_many`, in group commit and in
/// `submit_many`: the batch statement is refused as a whole, and its items
/// are redone one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_row_the_server_refuses_fails_only_its_item() -> TestResult {
    let db = EmptyDatabase::create("neighbours").await?;
    let result = async {
        let s = Arc::new(MySqlOptions::new().max_connections(4).connect(&db.url).await?);
        let ns = testing::unique_namespace("my-poison");
        let pool = db.pool(1).await?;
        for trigger in [
            "CREATE TRIGGER poison_update BEFORE UPDATE ON reliable_executor_tasks FOR EACH ROW \
             IF NEW.id LIKE 'poison%' AND NEW.state IN ('COMPLETED', 'PENDING') THEN \
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'this row refuses to finish'; END IF",
            "CREATE TRIGGER poison_insert BEFORE INSERT ON reliable_executor_tasks FOR EACH ROW \
             IF NEW.id = 'poison-new' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'this row refuses to exist'; \
             END IF",
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(trigger)).execute(&pool).await?;
        }
        // submit_many: the refused row alone fails.
        let mut batch: Vec<NewTask> = (0..GOOD).map(|i| testing::new_task(&format!("t{i:03}"))).collect();
        batch.insert(GOOD / 2, testing::new_task("poison-new"));
        batch.push(testing::new_task("poison"));
        let answers = s.submit_many(&ns, batch).await?;
        for (i, a) in answers.iter().enumerate() {
            match (i == GOOD / 2, a) {
                (true, Err(e)) => assert!(!e.is_retryable(), "a refused row is not retryable: {e}"),
                (false, Ok(sub)) => assert_eq!(sub.outcome, SubmitOutcome::Created),
                other => panic!("submit_many item {i}: {other:?}"),
            }
        }
        // finish_many: 100 completions and the poisoned one.
        let leases = claim_all(&s, &ns, GOOD + 1).await?;
        let items: Vec<(Lease, Finish)> = leases.iter().map(|l| (l.clone(), Finish::Completed)).collect();
        let answers = s.finish_many(&ns, items).await?;
        for (lease, a) in leases.iter().zip(&answers) {
            match (lease.id.as_str() == "poison", a) {
                (true, Err(e)) => assert!(!e.is_retryable(), "{e}"),
                (false, Ok(TaskState::Completed)) => {}
                other => panic!("finish_many of {}: {other:?}", lease.id),
            }
        }
        let counts = s.counts(&ns).await?;
        assert_eq!((counts.get(TaskState::Completed), counts.get(TaskState::Running)), (GOOD as u64, 1));
        // Group commit: concurrent finishes, the poisoned one among them.
        let more: Vec<NewTask> = (0..GOOD).map(|i| testing::new_task(&format!("u{i:03}"))).collect();
        for r in s.submit_many(&ns, more).await? {
            r?;
        }
        let leases = claim_all(&s, &ns, GOOD).await?;
        let poisoned = s.get(&ns, &executor_core::TaskId::new("poison")?).await?.and_then(|t| t.lease());
        let mut calls = Vec::new();
        for lease in leases.into_iter().chain(poisoned) {
            let (s, ns) = (Arc::clone(&s), ns.clone());
            calls.push(tokio::spawn(async move {
                (lease.id.clone(), s.finish(&ns, &lease, Finish::Completed).await)
            }));
        }
        for call in calls {
            let (id, answer) = call.await?;
            match (id.as_str() == "poison", answer) {
                (true, Err(_)) | (false, Ok(TaskState::Completed)) => {}
                (_, other) => panic!("finish of {id}: {other:?}"),
            }
        }
        let counts = s.counts(&ns).await?;
        assert_eq!(counts.get(TaskState::Completed), 2 * GOOD as u64, "{counts:?}");
        Ok::<_, Box<dyn std::error::Error>>(())
    }
    .await;
    db.drop_now().await?;
    result
}
