//! Connections killed on the server while claimers run: no task is lost,
//! none is handed to two live leases, and the storage (and whatever it
//! keeps beside the pool, such as a listener) reconnects by itself.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use executor_core::{
    Error, Namespace, TaskId, TaskRecord, TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, NewTask, Storage},
    testing,
};
use sqlx::{Database, Executor, pool::PoolOptions};
use tokio::time::Instant;

use super::{TestDb, TestResult, cleanup, storage, url};
use crate::{
    Dialect, SqlStorage,
    stmt::{Cols, SqlDb},
};

const LEASE: Duration = Duration::from_millis(1500);

/// The connection of dialect `D`.
type ConnOf<D> = <<D as Dialect>::Db as Database>::Connection;

/// A storage whose pool records the server-side id of every connection it
/// opens, so the test can kill exactly those and nobody else's.
async fn watched_storage<D: TestDb>(
    ids: Arc<Mutex<HashSet<i64>>>,
) -> Result<SqlStorage<D::Dialect>, Box<dyn std::error::Error>>
where
    for<'c> &'c mut ConnOf<D::Dialect>: Executor<'c, Database = <D::Dialect as Dialect>::Db>,
{
    let pool = PoolOptions::<<D::Dialect as Dialect>::Db>::new()
        .max_connections(D::POOL)
        .acquire_timeout(Duration::from_secs(5))
        .after_connect(move |conn, _meta| {
            let ids = Arc::clone(&ids);
            Box::pin(async move {
                let row = conn.fetch_one(D::CONNECTION_ID).await?;
                let id = row.int("id").map_err(sqlx::Error::Protocol)?;
                ids.lock().map_err(|e| sqlx::Error::Protocol(e.to_string()))?.insert(id);
                Ok(())
            })
        })
        .connect(&url::<D>())
        .await?;
    Ok(SqlStorage::<D::Dialect>::options().max_connections(6).open(pool).await?)
}

/// Finishes a task; when the connection dies mid-call, reads back whether
/// the write landed before trying again.
async fn complete<D: Dialect>(s: &SqlStorage<D>, ns: &Namespace, t: &TaskRecord) -> bool {
    let Some(lease) = t.lease() else { return false };
    for _ in 0..50 {
        match s.finish(ns, &lease, Finish::Completed).await {
            Ok(_) => return true,
            Err(Error::StaleFence { .. }) => {
                // Either our earlier try landed (COMPLETED with our fence) or
                // the lease was lost to a reap.
                return matches!(
                    s.get(ns, &t.id).await,
                    Ok(Some(r)) if r.state == TaskState::Completed && r.fence == lease.fence
                );
            }
            Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(5)).await,
            Err(e) => panic!("finish of {} failed: {e}", t.id),
        }
    }
    false
}

/// Three claimers complete [`TestDb::KILL_TASKS`] tasks while every
/// connection of their storage is killed on the server every 25 ms: every
/// task completes, and no (task, fence) is handed out twice.
pub async fn killed_connections_lose_nothing_and_double_claim_nothing<D: TestDb>() -> TestResult
where
    for<'c> &'c mut ConnOf<D::Dialect>: Executor<'c, Database = <D::Dialect as Dialect>::Db>,
{
    let _serial = super::serial().await;
    let ids = Arc::new(Mutex::new(HashSet::new()));
    let s = Arc::new(watched_storage::<D>(Arc::clone(&ids)).await?);
    let ns = testing::unique_namespace(&format!("{}-kill", D::SHORT));
    let total = D::KILL_TASKS;
    // Every claim counts an attempt, also one whose answer a killed
    // connection lost (its lease then expires and the reaper retries it),
    // and a loaded machine can let a 1.5 s lease lapse mid-batch: a budget
    // of 3 dead-lettered 20 tasks of a MariaDB run on 2 busy cores. What this
    // test checks is loss and double claims, not the budget, so it is wide.
    let tasks: Vec<NewTask> = (0..total)
        .map(|i| {
            let mut t = testing::new_task(&format!("k{i}"));
            t.max_attempts = 1_000;
            t
        })
        .collect();
    for r in s.submit_many(&ns, tasks).await? {
        r?;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(AtomicUsize::new(0));
    let killer = {
        let (ids, stop, kills) = (Arc::clone(&ids), Arc::clone(&stop), Arc::clone(&kills));
        let admin = storage::<D>().await;
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(25)).await;
                let victims: Vec<i64> = ids.lock().map(|mut v| v.drain().collect()).unwrap_or_default();
                for id in victims {
                    // A connection that already went is no kill, and no
                    // failure either.
                    let q = sqlx::query::<<D::Dialect as Dialect>::Db>(sqlx::AssertSqlSafe(D::kill(id)));
                    if let Ok(rows) = <D::Dialect as Dialect>::Db::fetch_all(q, admin.dialect().conns()).await
                        && rows.first().is_none_or(|r| r.flag("killed") == Ok(true))
                    {
                        kills.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        })
    };

    let errors = Arc::new(AtomicUsize::new(0));
    // (id, fence) of every claim handed out, and the completions won.
    let claims = Arc::new(Mutex::new(Vec::<(TaskId, u64)>::new()));
    let completions = Arc::new(Mutex::new(HashMap::<TaskId, u64>::new()));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut workers = Vec::new();
    for _ in 0..3 {
        let (s, ns, errors, claims, completions) =
            (Arc::clone(&s), ns.clone(), Arc::clone(&errors), Arc::clone(&claims), Arc::clone(&completions));
        workers.push(tokio::spawn(async move {
            let me = WorkerId::generate();
            while Instant::now() < deadline {
                let batch = match s.claim(&ns, &me, &ClaimPlan::default_queue(20), LEASE).await {
                    Ok(b) => b,
                    Err(e) if e.is_retryable() => {
                        errors.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    Err(e) => panic!("claim failed with a non-retryable error: {e}"),
                };
                if batch.is_empty() {
                    // Tasks whose claim committed but whose answer was lost
                    // come back through the reaper once their lease expires.
                    match s.reap(&ns, 100).await {
                        Ok(_) => {}
                        Err(e) if e.is_retryable() => {
                            errors.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => panic!("reap failed with a non-retryable error: {e}"),
                    }
                    match s.counts(&ns).await {
                        Ok(c) if c.get(TaskState::Completed) == total as u64 => return,
                        _ => tokio::time::sleep(Duration::from_millis(20)).await,
                    }
                    continue;
                }
                if let Ok(mut c) = claims.lock() {
                    c.extend(batch.iter().map(|t| (t.id.clone(), t.fence)));
                }
                for t in &batch {
                    if complete(&s, &ns, t).await
                        && let Ok(mut done) = completions.lock()
                    {
                        assert!(done.insert(t.id.clone(), t.fence).is_none(), "{} completed twice", t.id);
                    }
                }
            }
        }));
    }
    for w in workers {
        w.await?;
    }
    stop.store(true, Ordering::SeqCst);
    killer.await?;

    // Connections killed just before the killer stopped may still sit in
    // the storage's free list: each fails one call, retryably, and is
    // replaced. The storage must recover within a few calls.
    let mut counts = None;
    for _ in 0..10 {
        match s.counts(&ns).await {
            Ok(c) => {
                counts = Some(c);
                break;
            }
            Err(e) if e.is_retryable() => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let counts = counts.ok_or("the storage did not recover after the killing stopped")?;
    assert_eq!(counts.get(TaskState::Completed), total as u64, "tasks lost or stuck: {counts:?}");
    let claims = claims.lock().map(|c| c.clone()).unwrap_or_default();
    let unique: HashSet<_> = claims.iter().cloned().collect();
    assert_eq!(unique.len(), claims.len(), "one (task, fence) was handed out twice");
    let completions = completions.lock().map(|c| c.len()).unwrap_or_default();
    let kills = kills.load(Ordering::SeqCst);
    let errors = errors.load(Ordering::SeqCst);
    assert!(kills > 0, "the killer never killed a connection: the test proved nothing");
    eprintln!(
        "{total} tasks: {kills} connections killed, {errors} retryable errors seen by claimers, {} claims, \
         {completions} completions recorded",
        claims.len()
    );
    cleanup(&s, &ns).await;
    Ok(())
}
