//! The stores under test behind one small trait: connect with retries
//! (a worker may start while the store restarts), list every record, purge
//! a namespace.

use std::{future::Future, time::Duration};

use executor_core::{
    ListQuery, Namespace, Result, TaskRecord, TaskState,
    query::StateCounts,
    storage::{ExecutorStorage, Storage},
};
use executor_mysql::MySqlStorage;
use executor_postgres::{PostgresOptions, PostgresStorage};
use executor_redis::RedisStorage;

use crate::victims::Corruption;

/// A store the harness can drive.
pub trait ChaosStore: ExecutorStorage + Clone + Sized {
    /// Connects once, with settings that fail fast while the store is down.
    fn connect_once(url: &str) -> impl Future<Output = Result<Self>> + Send;

    /// Edits waiting task `id`'s record into garbage as `corruption` says
    /// (a corruption of another backend does nothing); returns whether it
    /// was edited (only a task still `CREATED` or `PENDING` is). For a
    /// tiered store, the hot tier's record.
    fn corrupt(
        &self,
        ns: &Namespace,
        id: &str,
        corruption: Corruption,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes every key or row of `ns`.
    fn purge(&self, ns: &Namespace) -> impl Future<Output = Result<()>> + Send;

    /// Closes the connections before the store's server is stopped (so a
    /// background connection, as PostgreSQL's listener, does not try to
    /// reconnect to a server going away). Dropping it is enough for most.
    fn close(self) -> impl Future<Output = ()> + Send {
        async move { drop(self) }
    }

    /// Connects, retrying for up to `patience` (a store restarting).
    fn connect_retrying(url: &str, patience: Duration) -> impl Future<Output = Result<Self>> + Send {
        async move {
            let end = tokio::time::Instant::now() + patience;
            loop {
                match Self::connect_once(url).await {
                    Ok(s) => return Ok(s),
                    Err(e) if tokio::time::Instant::now() >= end => return Err(e),
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        }
    }

    /// Connects to the store of a run: `url`, and for a store of two tiers
    /// `cold_url` too (single stores ignore it). Retries for up to `patience`.
    fn connect_run(
        url: &str,
        cold_url: Option<&str>,
        patience: Duration,
    ) -> impl Future<Output = Result<Self>> + Send {
        let _ = cold_url;
        Self::connect_retrying(url, patience)
    }

    /// Every record of `ns`, per tier: `[("store", ..)]` for a single store,
    /// `[("hot", ..), ("cold", ..)]` for a tiered one (a task may be in either,
    /// and during a move in both).
    fn tier_records(
        &self,
        ns: &Namespace,
    ) -> impl Future<Output = Result<Vec<(&'static str, Vec<TaskRecord>)>>> + Send {
        async move { Ok(vec![("store", list_all(self, ns).await?)]) }
    }

    /// Ids of the tasks waiting in a cold tier that had already been
    /// attempted: retries moved there from the hot tier (tasks submitted far
    /// arrive unattempted). Empty for a single store.
    fn demoted(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<String>>> + Send {
        let _ = ns;
        async { Ok(Vec::new()) }
    }

    /// Task counts by state, per tier (named as in [`ChaosStore::tier_records`]).
    fn tier_counts(
        &self,
        ns: &Namespace,
    ) -> impl Future<Output = Result<Vec<(&'static str, StateCounts)>>> + Send {
        async move { Ok(vec![("store", self.counts(ns).await?)]) }
    }
}

/// Every record of `ns` in `storage`, state by state, page by page.
///
/// # Errors
/// The store failed.
pub async fn list_all<S: Storage>(storage: &S, ns: &Namespace) -> Result<Vec<TaskRecord>> {
    let mut out = Vec::new();
    for state in TaskState::ALL {
        let mut query = ListQuery::new(state, 1_000);
        loop {
            let page = storage.list(ns, query.clone()).await?;
            out.extend(page.tasks);
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => break,
            }
        }
    }
    Ok(out)
}

impl ChaosStore for RedisStorage {
    async fn connect_once(url: &str) -> Result<Self> {
        RedisStorage::builder(url).pool_size(2).command_timeout(Duration::from_secs(2)).connect().await
    }

    async fn corrupt(&self, ns: &Namespace, id: &str, corruption: Corruption) -> Result<bool> {
        use fred::interfaces::LuaInterface;
        let Some(script) = corruption.redis_script() else { return Ok(false) };
        let key = format!("{{re:{}}}:t:{id}", ns.as_str());
        let edited: i64 = self
            .pool()
            .next()
            .eval(script, vec![key], Vec::<String>::new())
            .await
            .map_err(|e| executor_core::Error::storage(e, true))?;
        Ok(edited == 1)
    }

    async fn purge(&self, ns: &Namespace) -> Result<()> {
        RedisStorage::purge(self, ns).await.map(|_| ())
    }
}

impl ChaosStore for MySqlStorage {
    async fn connect_once(url: &str) -> Result<Self> {
        MySqlStorage::options()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(2))
            .poll_interval(Duration::from_millis(5), Duration::from_millis(100))
            .connect(url)
            .await
    }

    async fn corrupt(&self, ns: &Namespace, id: &str, corruption: Corruption) -> Result<bool> {
        let Some(sql) = corruption.mysql_update() else { return Ok(false) };
        let err = |e| executor_core::Error::storage(e, true);
        let mut conn = self.pool().acquire().await.map_err(err)?;
        // A row from before the schema's state check, or a server that
        // ignores CHECK: MariaDB lets a session turn the check off.
        let unchecked =
            sqlx::query("SET SESSION check_constraint_checks = 0").execute(&mut *conn).await.is_ok();
        let done = sqlx::query(sql).bind(ns.as_str()).bind(id).execute(&mut *conn).await;
        if unchecked {
            sqlx::query("SET SESSION check_constraint_checks = 1").execute(&mut *conn).await.map_err(err)?;
        }
        Ok(done.map_err(err)?.rows_affected() == 1)
    }

    async fn purge(&self, ns: &Namespace) -> Result<()> {
        for sql in [
            "DELETE FROM reliable_executor_tasks WHERE ns = ?",
            "DELETE FROM reliable_executor_leaders WHERE ns = ?",
            "DELETE FROM reliable_executor_schedules WHERE ns = ?",
        ] {
            sqlx::query(sql)
                .bind(ns.as_str())
                .execute(self.pool())
                .await
                .map_err(|e| executor_core::Error::storage(e, true))?;
        }
        Ok(())
    }
}

impl ChaosStore for PostgresStorage {
    async fn connect_once(url: &str) -> Result<Self> {
        PostgresOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(2))
            .poll_interval(Duration::from_millis(5), Duration::from_millis(100))
            .connect(url)
            .await
    }

    async fn corrupt(&self, ns: &Namespace, id: &str, corruption: Corruption) -> Result<bool> {
        let Some(sql) = corruption.postgres_update() else { return Ok(false) };
        let done = executor_postgres::sqlx::query(sql)
            .bind(ns.as_str())
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(|e| executor_core::Error::storage(e, true))?;
        Ok(done.rows_affected() == 1)
    }

    async fn purge(&self, ns: &Namespace) -> Result<()> {
        PostgresStorage::purge(self, ns).await.map(|_| ())
    }

    /// The storage keeps the connections it used for its next statements,
    /// and `PgPool::close` waits for every connection to be back: drop the
    /// storage first (its listener stops with it), then close, for 5 s at most.
    async fn close(self) {
        let pool = self.pool().clone();
        drop(self);
        let _ = tokio::time::timeout(Duration::from_secs(5), pool.close()).await;
    }
}
