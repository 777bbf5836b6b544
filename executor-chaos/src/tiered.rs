//! The tiered backend: `executor_core::TieredStorage` with Redis as the hot
//! tier and MariaDB as the cold one. The horizon is short, so a task
//! submitted with a delay of a few seconds lands in the cold tier and the
//! leader's housekeeping promotes it to the hot tier during the run, under
//! the same faults as everything else.

use std::time::Duration;

use executor_core::{
    Error, ListQuery, Namespace, Result, TaskRecord, TaskState, TieredStorage, query::StateCounts,
    storage::Storage,
};
use executor_mysql::MySqlStorage;
use executor_redis::RedisStorage;

use crate::store::{ChaosStore, list_all};

/// Redis hot, MariaDB cold.
pub type Tiered = TieredStorage<RedisStorage, MySqlStorage>;

/// The horizon of a run's tiered store (the 5-minute default would keep
/// every task of a short run hot): a task due later than this when it is
/// submitted goes to the cold tier, and is promoted once it comes within it.
pub const HORIZON: Duration = Duration::from_secs(3);

/// Shortest delay of a task submitted past the horizon: it spends at least
/// this minus [`HORIZON`] in the cold tier.
pub const MIN_FAR_DELAY: Duration = Duration::from_secs(4);

/// Longest delay of a task submitted past the horizon.
pub const MAX_FAR_DELAY: Duration = Duration::from_secs(12);

/// A random delay past the horizon, in `MIN_FAR_DELAY..=MAX_FAR_DELAY`.
pub fn far_delay() -> Duration {
    Duration::from_millis(rand::random_range(
        MIN_FAR_DELAY.as_millis() as u64..=MAX_FAR_DELAY.as_millis() as u64,
    ))
}

impl ChaosStore for Tiered {
    /// A tiered store has two URLs: use [`ChaosStore::connect_run`].
    async fn connect_once(url: &str) -> Result<Self> {
        let _ = url;
        Err(Error::invalid("url", "a tiered store needs the cold tier's URL too (connect_run)"))
    }

    async fn connect_run(url: &str, cold_url: Option<&str>, patience: Duration) -> Result<Self> {
        let cold_url = cold_url.ok_or_else(|| {
            Error::invalid("cold_url", "a tiered store needs the URL of its cold tier (MariaDB), --cold-url")
        })?;
        let hot = RedisStorage::connect_retrying(url, patience).await?;
        let cold = MySqlStorage::connect_retrying(cold_url, patience).await?;
        Ok(TieredStorage::new(hot, cold).horizon(HORIZON))
    }

    /// Corrupts a Redis record in the hot tier and a MariaDB row in the
    /// cold tier (such victims are submitted past the horizon).
    async fn corrupt(
        &self,
        ns: &Namespace,
        id: &str,
        corruption: crate::victims::Corruption,
    ) -> Result<bool> {
        if corruption.is_mysql() {
            self.cold().corrupt(ns, id, corruption).await
        } else {
            self.hot().corrupt(ns, id, corruption).await
        }
    }

    /// Purges both tiers, the cold one even if the hot one failed.
    async fn purge(&self, ns: &Namespace) -> Result<()> {
        let hot = ChaosStore::purge(self.hot(), ns).await;
        let cold = ChaosStore::purge(self.cold(), ns).await;
        hot.and(cold)
    }

    async fn tier_records(&self, ns: &Namespace) -> Result<Vec<(&'static str, Vec<TaskRecord>)>> {
        Ok(vec![("hot", list_all(self.hot(), ns).await?), ("cold", list_all(self.cold(), ns).await?)])
    }

    async fn demoted(&self, ns: &Namespace) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut query = ListQuery::new(TaskState::Pending, 1_000);
        loop {
            let page = self.cold().list(ns, query.clone()).await?;
            out.extend(page.tasks.iter().filter(|t| t.attempts > 0).map(|t| t.id.as_str().to_owned()));
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    async fn tier_counts(&self, ns: &Namespace) -> Result<Vec<(&'static str, StateCounts)>> {
        Ok(vec![("hot", self.hot().counts(ns).await?), ("cold", self.cold().counts(ns).await?)])
    }
}
