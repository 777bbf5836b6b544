//! Bad input never panics and never harms other tasks: oversized payloads,
//! ids full of key syntax, and task hashes edited by hand into nonsense.

use std::time::Duration;

use executor_core::{
    Client, Error, ListQuery, Submit, TaskId, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Storage},
    testing,
};
use fred::interfaces::HashesInterface;
use reliable_executor_redis::RedisStorage;

use crate::common;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const LEASE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn oversized_payloads_are_refused_at_submit() -> TestResult {
    let (storage, ns) = common::fresh().await;
    // The store's hard cap is a Redis string's; the user's limit is the
    // client's one setting, and the lower one applies.
    assert_eq!(storage.max_payload().await?, RedisStorage::MAX_PAYLOAD);
    let client = Client::without_name_check(storage.clone(), ns.clone()).max_payload(100);
    assert_eq!(client.clone().max_payload(usize::MAX).payload_limit().await?, RedisStorage::MAX_PAYLOAD);
    let mut big = testing::new_task("big");
    big.payload = vec![b'1'; 101];
    match client.submit_new(big.clone()).await {
        Err(Error::PayloadTooLarge { size: 101, limit: 100 }) => {}
        other => panic!("expected PayloadTooLarge, got {other:?}"),
    }
    let out = client.submit_many(vec![testing::new_task("small"), big]).await;
    assert!(out[0].is_ok() && matches!(out[1], Err(Error::PayloadTooLarge { .. })), "{out:?}");
    assert!(storage.get(&ns, &TaskId::new("big")?).await?.is_none());
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn ids_with_key_syntax_round_trip() -> TestResult {
    let (storage, ns) = common::fresh().await;
    let ids = ["a{b}c", "}{", "x:y:z", "p|q", "{re:other}:t:x", "ünïcode-✓", "*?[]"];
    for id in ids {
        storage.submit(&ns, testing::new_task(id)).await?;
    }
    let mut listed = Vec::new();
    let mut query = ListQuery::new(TaskState::Created, 2);
    loop {
        let page = storage.list(&ns, query.clone()).await?;
        listed.extend(page.tasks.into_iter().map(|t| t.id.into_string()));
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => break,
        }
    }
    listed.sort();
    let mut expected: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
    expected.sort();
    assert_eq!(listed, expected, "each id listed once");
    let claimed = storage.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(100), LEASE).await?;
    assert_eq!(claimed.len(), ids.len());
    for task in claimed {
        let lease = task.lease().ok_or("no lease")?;
        assert_eq!(storage.finish(&ns, &lease, Finish::Completed).await?, TaskState::Completed);
    }
    // The other namespace-looking id did not touch keys outside this namespace.
    assert_eq!(storage.counts(&ns).await?.get(TaskState::Completed), ids.len() as u64);
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn a_hand_edited_task_goes_to_error_and_the_rest_carry_on() -> TestResult {
    let (storage, ns) = common::fresh().await;
    for id in ["a", "b", "c", "d"] {
        storage.submit(&ns, testing::new_task(id)).await?;
    }
    let key = |id: &str| format!("{{re:{ns}}}:t:{id}");
    let redis = storage.pool().next();
    let _: () = redis.hset(key("b"), ("r", "{not json")).await?;
    let _: () = redis.hset(key("c"), ("s", "SLEEPING")).await?;
    let _: () = redis.hset(key("d"), ("f", "-")).await?;

    match storage.get(&ns, &TaskId::new("b")?).await {
        Err(Error::Corrupt { id, reason }) => {
            assert_eq!(id.as_str(), "b");
            assert!(reason.contains("`r`"), "the reason names the field: {reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let claimed = storage.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?;
    let ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["a"], "only the sound task is handed out");
    for id in ["b", "c", "d"] {
        let (state, reason): (Option<String>, Option<String>) = redis.hmget(key(id), vec!["s", "e"]).await?;
        assert_eq!(state.as_deref(), Some("ERROR"), "{id} is dead-lettered");
        assert!(reason.unwrap_or_default().contains("corrupt"), "{id} says why");
    }
    assert!(
        storage.claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), LEASE).await?.is_empty(),
        "nothing is stuck"
    );
    common::cleanup(&storage, &ns).await;
    Ok(())
}
