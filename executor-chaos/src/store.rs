//! The two stores under test behind one small trait: connect with retries
//! (a worker may start while the store restarts), purge a namespace.

use std::{future::Future, time::Duration};

use executor_core::{Namespace, Result, Storage};
use executor_mysql::MySqlStorage;
use executor_redis::RedisStorage;

/// A store the harness can drive.
pub trait ChaosStore: Storage + Clone + Sized {
    /// Connects once, with settings that fail fast while the store is down.
    fn connect_once(url: &str) -> impl Future<Output = Result<Self>> + Send;

    /// Deletes every key or row of `ns`.
    fn purge(&self, ns: &Namespace) -> impl Future<Output = Result<()>> + Send;

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
}

impl ChaosStore for RedisStorage {
    async fn connect_once(url: &str) -> Result<Self> {
        RedisStorage::builder(url).pool_size(2).command_timeout(Duration::from_secs(2)).connect().await
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

    async fn purge(&self, ns: &Namespace) -> Result<()> {
        for sql in [
            "DELETE FROM reliable_executor_tasks WHERE ns = ?",
            "DELETE FROM reliable_executor_leaders WHERE ns = ?",
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
