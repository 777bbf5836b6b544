//! Migration 20261203000001 on a database that already holds
//! tasks under the older migrations: every task lands in the default
//! queue at priority 0, the waiting ones are claimed as before, finished
//! ones stay out of the claim index.

use executor_core::storage::QueueControl;
use std::time::Duration;

use executor_core::{Namespace, QueueName, TaskId, TaskState, WorkerId, queue::ClaimPlan, storage::Storage};
use reliable_executor_mysql::{MIGRATIONS_TABLE, MySqlOptions};

use crate::support::EmptyDatabase;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The first migration of named queues; the ones before it are "older".
const QUEUES_MIGRATION: &str = "20261203000001";

#[tokio::test]
async fn queues_migration_upgrades_a_database_with_tasks() -> TestResult {
    let db = EmptyDatabase::create("upgrade").await?;
    let pool = db.pool(2).await?;

    // The older migrations, through sqlx's own runner and bookkeeping
    // table, from a copy of their files (so their checksums match).
    let dir = std::env::temp_dir().join(format!("rex_old_migrations_{}", db.name));
    std::fs::create_dir_all(&dir)?;
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for entry in std::fs::read_dir(&source)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if name.ends_with(".sql") && name.as_str() < QUEUES_MIGRATION {
            std::fs::copy(&path, dir.join(&name))?;
        }
    }
    let mut old = sqlx::migrate::Migrator::new(dir.as_path()).await?;
    old.dangerous_set_table_name(MIGRATIONS_TABLE);
    old.set_locking(false);
    old.run(&pool).await?;
    std::fs::remove_dir_all(&dir)?;

    let ns = Namespace::new("upgrade")?;
    for (id, state, due_ago) in
        [("wait-1", "CREATED", 20_000), ("wait-2", "PENDING", 10_000), ("done", "COMPLETED", 30_000)]
    {
        sqlx::query(
            "INSERT INTO reliable_executor_tasks (ns, id, name, state, payload, max_attempts, created_at, due_at) \
             VALUES (?, ?, 'noop', ?, 'null', 3, 1, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - ?)",
        )
        .bind(ns.as_str())
        .bind(id)
        .bind(state)
        .bind(due_ago)
        .execute(&pool)
        .await?;
    }

    // Opening the storage runs the new migration on these rows.
    let storage = MySqlOptions::new().max_connections(2).open(pool.clone()).await?;
    let rank: Vec<(String, Option<u8>)> =
        sqlx::query_as("SELECT id, queue_rank FROM reliable_executor_tasks WHERE ns = ? ORDER BY id")
            .bind(ns.as_str())
            .fetch_all(&pool)
            .await?;
    assert_eq!(
        rank,
        [("done".to_owned(), None), ("wait-1".to_owned(), Some(9)), ("wait-2".to_owned(), Some(9))],
        "waiting rows ranked as priority 0, finished ones outside the claim index"
    );
    for id in ["wait-1", "done"] {
        let rec = storage.get(&ns, &TaskId::new(id)?).await?.ok_or("row gone")?;
        assert_eq!((rec.queue.clone(), rec.priority), (QueueName::default(), 0), "{rec:?}");
    }
    let infos = storage.queues(&ns).await?;
    assert_eq!(infos.len(), 1, "{infos:?}");
    assert_eq!((infos[0].queue.as_str(), infos[0].waiting, infos[0].due), ("default", 2, 2));
    let claimed = storage
        .claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(10), Duration::from_secs(30))
        .await?;
    let ids: Vec<&str> = claimed.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["wait-1", "wait-2"], "claimed as before, earliest due first");
    assert!(claimed.iter().all(|t| t.state == TaskState::Running));

    // Running the migrations again finds nothing to do.
    storage.migrate().await?;
    drop(storage);
    pool.close().await;
    db.drop_now().await?;
    Ok(())
}
