//! The inbox (`lua/common/07_inbox.lua`, `ingest`): a lone plain submit under a
//! generated id is one `RPUSH` of an entry, and the next claim or read
//! creates the task. These tests damage and replay entries by hand: a
//! resent entry creates its task once, a bad one is set aside without
//! stopping the ones behind it, an inbox of another type fails submits
//! clearly and stops nothing else, a submitter's clock ahead of the
//! server's delays nothing, and a long inbox is emptied by reads and claims.

use std::time::{Duration, Instant};

use executor_core::{
    Error, SubmitOutcome, TaskId, TaskState, Timestamp, WorkerId, storage::NewTask, storage::Storage,
};
use fred::interfaces::{KeysInterface, ListInterface};

use crate::common::corrupt::{Damage, TestResult};

const LEASE: Duration = Duration::from_secs(60);

fn fresh(n: u32) -> NewTask {
    NewTask::with_generated_id("inbox", format!("{{\"n\":{n}}}").into_bytes())
}

/// Submits a fresh task alone: created, under its own id.
async fn submit(d: &Damage, task: NewTask) -> TestResult<TaskId> {
    let id = task.id.clone();
    let out = d.storage.submit(&d.ns, task).await?;
    assert_eq!((out.id.clone(), out.outcome), (id.clone(), SubmitOutcome::Created));
    Ok(id)
}

async fn entries(d: &Damage, key: &str) -> TestResult<Vec<Vec<u8>>> {
    Ok(d.redis.lrange(d.key(key), 0, -1).await?)
}

/// An entry as `Encoded::into_entry` writes it: twelve lines, then the
/// payload.
fn entry(id: &str, max_attempts: &str, nonce: &str, at_ms: u64) -> Vec<u8> {
    format!("{id}\ninbox\nn\n0\n{max_attempts}\n\n\n\n{nonce}\n\n\n{at_ms}\n{{\"n\":0}}").into_bytes()
}

#[tokio::test]
async fn a_fresh_submit_is_an_inbox_entry_until_read() -> TestResult {
    let d = Damage::new("inbox-entry").await;
    let id = submit(&d, fresh(1)).await?;
    // Nothing has claimed or read yet: the entry is all there is.
    let queued = entries(&d, "inbox").await?;
    assert_eq!(queued.len(), 1, "one entry");
    assert!(
        queued[0].starts_with(format!("{id}\ninbox\nn\n0\n").as_bytes()),
        "{:?}",
        String::from_utf8_lossy(&queued[0])
    );
    assert!(queued[0].ends_with(b"\n{\"n\":1}"), "the payload last");
    let exists: i64 = d.redis.exists(d.task_key(id.as_str())).await?;
    assert_eq!(exists, 0, "no record before a read");
    // A read creates it, and empties the inbox.
    let rec = d.storage.get(&d.ns, &id).await?.ok_or("the read found no task")?;
    assert_eq!((rec.state, rec.payload.as_slice()), (TaskState::Created, &b"{\"n\":1}"[..]));
    assert!(entries(&d, "inbox").await?.is_empty(), "the inbox is empty after the read");
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_resent_entry_creates_its_task_once() -> TestResult {
    let d = Damage::new("inbox-resend").await;
    let id = submit(&d, fresh(1)).await?;
    let first = entries(&d, "inbox").await?.pop().ok_or("no entry")?;
    // fred repeats a command whose connection dropped: the same bytes again.
    let _: i64 = d.redis.rpush(d.key("inbox"), first.clone()).await?;
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), 10, LEASE).await?;
    assert_eq!(claimed.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), vec![id.clone()], "claimed once");
    // Resent after the claim: still not a second task, nor set aside.
    let _: i64 = d.redis.rpush(d.key("inbox"), first).await?;
    assert!(
        d.storage.claim(&d.ns, &WorkerId::generate(), 10, LEASE).await?.is_empty(),
        "nothing more to claim"
    );
    assert_eq!(d.storage.get(&d.ns, &id).await?.map(|r| r.state), Some(TaskState::Running));
    assert!(entries(&d, "inbox:aside").await?.is_empty(), "a resend is no bad entry");
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn bad_entries_are_set_aside_and_the_rest_created() -> TestResult {
    let d = Damage::new("inbox-bad").await;
    let a = submit(&d, fresh(1)).await?;
    let now = Timestamp::now_system().as_millis();
    let inbox = d.key("inbox");
    let _: i64 = d.redis.rpush(&inbox, "not an entry").await?;
    let _: i64 = d.redis.rpush(&inbox, entry("bad-number", "99999999999999999", "n1", now)).await?;
    // A's id again under another nonce: taken, not a resend.
    let _: i64 = d.redis.rpush(&inbox, entry(a.as_str(), "3", "other-nonce", now)).await?;
    let b = submit(&d, fresh(2)).await?;
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), 10, LEASE).await?;
    assert_eq!(
        claimed.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        vec![a.clone(), b],
        "the good ones, in order"
    );
    let aside = entries(&d, "inbox:aside").await?;
    let reasons: Vec<String> = aside
        .iter()
        .map(|e| String::from_utf8_lossy(e).lines().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        reasons,
        [
            "the entry does not parse",
            "max_attempts is not a whole number",
            &format!("task {a} already exists"),
        ],
        "each bad entry set aside with why"
    );
    assert!(aside[0].ends_with(b"\nnot an entry"), "the entry is kept whole behind its reason");
    assert!(entries(&d, "inbox").await?.is_empty());
    let exists: i64 = d.redis.exists(d.task_key("bad-number")).await?;
    assert_eq!(exists, 0, "a bad entry writes no record");
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn an_inbox_of_another_type_fails_submits_and_stops_nothing_else() -> TestResult {
    let d = Damage::new("inbox-type").await;
    let _: () = d.redis.set(d.key("inbox"), "x", None, None, false).await?;
    let e = d.storage.submit(&d.ns, fresh(1)).await.err().ok_or("a submit to a string inbox succeeded")?;
    assert!(
        matches!(&e, Error::Storage { retryable: false, .. }) && e.to_string().contains("WRONGTYPE"),
        "{e:?}"
    );
    // Everything else works beside it: a submit by id, reads, claims.
    let id = d.storage.submit(&d.ns, executor_core::testing::new_task("by-id")).await?.id;
    assert_eq!(d.storage.counts(&d.ns).await?.get(TaskState::Created), 1);
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), 10, LEASE).await?;
    assert_eq!(claimed.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), vec![id]);
    let kept: String = d.redis.get(d.key("inbox")).await?;
    assert_eq!(kept, "x", "the damaged key is left for its owner");
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_submitter_clock_ahead_delays_nothing() -> TestResult {
    let d = Damage::new("inbox-clock").await;
    let hour_ahead = Timestamp::now_system().as_millis() + 3_600_000;
    let _: i64 = d.redis.rpush(d.key("inbox"), entry("ahead", "3", "n1", hour_ahead)).await?;
    let store_now = d.storage.now(&d.ns).await?;
    let rec = d.storage.get(&d.ns, &TaskId::new("ahead")?).await?.ok_or("not created")?;
    assert!(
        rec.created_at <= store_now.saturating_add(Duration::from_secs(1)),
        "created {} vs now {store_now}",
        rec.created_at
    );
    assert_eq!(rec.due_at, rec.created_at);
    let claimed = d.storage.claim(&d.ns, &WorkerId::generate(), 10, LEASE).await?;
    assert_eq!(claimed.len(), 1, "due at once");
    d.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn reads_and_claims_empty_a_long_inbox() -> TestResult {
    let d = Damage::new("inbox-long").await;
    // Past INBOX_MAX (500) entries, so a read needs several script calls.
    let n = 1_234;
    for i in 0..n {
        submit(&d, fresh(i)).await?;
    }
    assert_eq!(entries(&d, "inbox").await?.len(), n as usize, "all queued, none created");
    assert_eq!(
        d.storage.counts(&d.ns).await?.get(TaskState::Created),
        u64::from(n),
        "counted after one read"
    );
    assert!(entries(&d, "inbox").await?.is_empty());
    let mut claimed = 0;
    let worker = WorkerId::generate();
    loop {
        let got = d.storage.claim(&d.ns, &worker, 500, LEASE).await?.len();
        if got == 0 {
            break;
        }
        claimed += got;
    }
    assert_eq!(claimed, n as usize, "each claimed once");
    // And straight to claims, with no read between: 600 > INBOX_MAX.
    for i in 0..600 {
        submit(&d, fresh(i)).await?;
    }
    let mut claimed = 0;
    for _ in 0..10 {
        claimed += d.storage.claim(&d.ns, &worker, 1_000, LEASE).await?.len();
    }
    assert_eq!(claimed, 600, "claims empty the inbox 500 entries at a time");
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_sees_the_inbox_even_without_the_marker() -> TestResult {
    let d = Damage::new("inbox-wake").await;
    // Watcher started, marker left from nothing.
    d.storage.wait_for_work(&d.ns, Duration::from_millis(100)).await?;
    submit(&d, fresh(1)).await?;
    // The marker the submit set is taken away: the waiter must still find
    // the entry by its peek, and at once.
    let _: i64 = d.redis.del(d.key("wake")).await?;
    let started = Instant::now();
    d.storage.wait_for_work(&d.ns, Duration::from_secs(20)).await?;
    let waited = started.elapsed();
    d.cleanup().await;
    assert!(waited < Duration::from_secs(10), "the waiter slept {waited:?} beside an inbox entry");
    Ok(())
}

#[tokio::test]
async fn an_id_deep_in_a_long_inbox_is_taken_for_scripted_submits() -> TestResult {
    let d = Damage::new("inbox-deep").await;
    // 600 entries: more than one ingest (500) takes, so the scripts answer
    // `ingest` and Rust empties the inbox before calling again.
    let mut last = None;
    for i in 0..600 {
        last = Some(submit(&d, fresh(i)).await?);
    }
    let last = last.ok_or("no task")?;
    let mut alone = executor_core::testing::new_task(last.as_str());
    alone.payload = b"{\"n\":-1}".to_vec();
    let e = d.storage.submit(&d.ns, alone.clone()).await.err();
    assert!(matches!(&e, Some(Error::DuplicateId(id)) if *id == last), "alone: {e:?}");
    for _ in 0..600 {
        submit(&d, fresh(1)).await?;
    }
    let out = d.storage.submit_many(&d.ns, vec![alone, executor_core::testing::new_task("after")]).await?;
    assert!(matches!(&out[0], Err(Error::DuplicateId(id)) if *id == last), "in a batch: {out:?}");
    assert!(matches!(&out[1], Ok(s) if s.outcome == SubmitOutcome::Created), "{out:?}");
    assert_eq!(d.storage.counts(&d.ns).await?.get(TaskState::Created), 1_201);
    let rec = d.storage.get(&d.ns, &last).await?.ok_or("gone")?;
    assert_eq!(rec.payload, b"{\"n\":599}".to_vec(), "the fresh task, untouched");
    assert!(entries(&d, "inbox:aside").await?.is_empty());
    d.assert_counts_exact().await?;
    d.cleanup().await;
    Ok(())
}
