//! [`AnyStorage`]: the store chosen by configuration, not by type.
//!
//! A service that reads its store from configuration (`TASKS_URL=redis://…`
//! in production, `memory:` in tests) builds one executor type for all of
//! them:
//!
//! ```
//! use reliable_executor_any::AnyStorage;
//! use executor_core::{Executor, prelude::*};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), executor_core::Error> {
//! let url = std::env::var("TASKS_URL").unwrap_or_else(|_| "memory:".to_owned());
//! let storage = AnyStorage::connect(&url).await?;
//! assert_eq!(storage.kind(), "memory");
//! let executor: Executor<AnyStorage> = Executor::builder(storage).build().await?;
//! # let _ = executor;
//! # Ok(())
//! # }
//! ```
//!
//! Each method forwards to the chosen store with one `match`: no boxing,
//! no dynamic dispatch. The Redis, MySQL and PostgreSQL drivers are Cargo
//! features (`redis`, `mysql`, `postgres`, all on by default).

use executor_core::storage::{HistoryStore, Presence, QueueControl, RunNow, ScheduleStore};
use std::time::Duration;

use executor_core::{
    Error, ListQuery, MemoryStorage, Namespace, Page, QueueName, Result, Submitted, TaskId, TaskRecord,
    TaskState, TieredStorage, Timestamp, WorkerId,
    query::{CancelOutcome, Retention, StateCounts},
    queue::{ClaimPlan, QueueInfo, QueueLimits},
    schedule::Schedule,
    storage::{
        Advance, Finish, Heartbeat, HistoryBucket, HistoryCount, Leadership, Lease, NewTask, Reaped,
        ScheduleEntry, Storage, TierStorage,
    },
};
#[cfg(feature = "mysql")]
use executor_mysql::MySqlStorage;
#[cfg(feature = "postgres")]
use executor_postgres::PostgresStorage;
#[cfg(feature = "redis")]
use executor_redis::RedisStorage;

/// A store chosen at run time: memory, Redis, MySQL/MariaDB, PostgreSQL,
/// or Redis hot with MySQL cold.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyStorage {
    /// The in-process store (tests, quick starts; not durable).
    Memory(MemoryStorage),
    /// Redis, standalone or cluster.
    #[cfg(feature = "redis")]
    Redis(RedisStorage),
    /// MySQL 8 or MariaDB 10.6+.
    #[cfg(feature = "mysql")]
    MySql(MySqlStorage),
    /// PostgreSQL 13+.
    #[cfg(feature = "postgres")]
    Postgres(PostgresStorage),
    /// Short delays in Redis, long ones in MySQL.
    #[cfg(all(feature = "redis", feature = "mysql"))]
    Tiered(TieredStorage<RedisStorage, MySqlStorage>),
}

impl AnyStorage {
    /// Connects to the store a URL names:
    ///
    /// | URL | store |
    /// |---|---|
    /// | `memory:` (or `memory://`) | a new [`MemoryStorage`] |
    /// | `redis://host:port/db`, `rediss://…` | [`RedisStorage`] (feature `redis`) |
    /// | `redis-cluster://host:port?node=host2:port2`, `rediss-cluster://…` | [`RedisStorage`] on a cluster |
    /// | `mysql://user:pass@host:port/db`, `mariadb://…` | [`MySqlStorage`] (feature `mysql`); TLS with `?ssl-mode=VERIFY_IDENTITY&ssl-ca=<file>` |
    /// | `postgres://user:pass@host:port/db`, `postgresql://…` | [`PostgresStorage`] (feature `postgres`); TLS with `?sslmode=verify-full&sslrootcert=<file>` |
    ///
    /// The `rediss` schemes verify the server against the system's CA
    /// certificates; for a private CA, build the store with
    /// `RedisStorage::builder(url).tls_ca_file(..)` and wrap it in
    /// [`AnyStorage::Redis`].
    ///
    /// # Errors
    /// [`Error::Invalid`] for a scheme this build does not know (naming the
    /// ones it does), or one whose feature is off; the driver's connect
    /// errors otherwise.
    pub async fn connect(url: &str) -> Result<Self> {
        let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase()).unwrap_or_default();
        match scheme.as_str() {
            "memory" => Ok(Self::Memory(MemoryStorage::new())),
            #[cfg(feature = "redis")]
            "redis" | "rediss" | "redis-cluster" | "rediss-cluster" => {
                Ok(Self::Redis(RedisStorage::connect(url).await?))
            }
            #[cfg(feature = "mysql")]
            "mysql" | "mariadb" => {
                let url = match url.strip_prefix("mariadb") {
                    Some(rest) => format!("mysql{rest}"),
                    None => url.to_owned(),
                };
                Ok(Self::MySql(MySqlStorage::connect(&url).await?))
            }
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => Ok(Self::Postgres(PostgresStorage::connect(url).await?)),
            _ => Err(Error::invalid(
                "store URL",
                format!(
                    "`{}` does not name a store this build knows; use one of: {}",
                    redact(url),
                    Self::SCHEMES.join(", ")
                ),
            )),
        }
    }

    /// The URL schemes [`AnyStorage::connect`] accepts in this build.
    pub const SCHEMES: &'static [&'static str] = &[
        "memory:",
        #[cfg(feature = "redis")]
        "redis://",
        #[cfg(feature = "redis")]
        "rediss://",
        #[cfg(feature = "redis")]
        "redis-cluster://",
        #[cfg(feature = "redis")]
        "rediss-cluster://",
        #[cfg(feature = "mysql")]
        "mysql://",
        #[cfg(feature = "mysql")]
        "mariadb://",
        #[cfg(feature = "postgres")]
        "postgres://",
        #[cfg(feature = "postgres")]
        "postgresql://",
    ];

    /// Redis hot, MySQL cold: see [`TieredStorage`].
    #[cfg(all(feature = "redis", feature = "mysql"))]
    pub fn tiered(hot: RedisStorage, cold: MySqlStorage) -> Self {
        Self::Tiered(TieredStorage::new(hot, cold))
    }

    /// Deletes everything of namespace `ns` (tasks, indexes, leadership,
    /// wake-up markers) from whichever store this is; returns how many
    /// tasks or keys went. For tests and for retiring an application:
    /// running executors on `ns` lose their tasks.
    ///
    /// # Errors
    /// Store failures.
    pub async fn purge(&self, ns: &Namespace) -> Result<u64> {
        match self {
            Self::Memory(s) => {
                let n = s.counts(ns).await?.total();
                s.remove_namespace(ns);
                Ok(n)
            }
            #[cfg(feature = "redis")]
            Self::Redis(s) => s.purge(ns).await,
            #[cfg(feature = "mysql")]
            Self::MySql(s) => s.purge(ns).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => s.purge(ns).await,
            #[cfg(all(feature = "redis", feature = "mysql"))]
            Self::Tiered(s) => Ok(s.hot().purge(ns).await? + s.cold().purge(ns).await?),
        }
    }

    /// Which store this is: `memory`, `redis`, `mysql`, `postgres` or `tiered`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Memory(_) => "memory",
            #[cfg(feature = "redis")]
            Self::Redis(_) => "redis",
            #[cfg(feature = "mysql")]
            Self::MySql(_) => "mysql",
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => "postgres",
            #[cfg(all(feature = "redis", feature = "mysql"))]
            Self::Tiered(_) => "tiered",
        }
    }
}

impl From<MemoryStorage> for AnyStorage {
    fn from(s: MemoryStorage) -> Self {
        Self::Memory(s)
    }
}

#[cfg(feature = "redis")]
impl From<RedisStorage> for AnyStorage {
    fn from(s: RedisStorage) -> Self {
        Self::Redis(s)
    }
}

#[cfg(feature = "mysql")]
impl From<MySqlStorage> for AnyStorage {
    fn from(s: MySqlStorage) -> Self {
        Self::MySql(s)
    }
}

#[cfg(feature = "postgres")]
impl From<PostgresStorage> for AnyStorage {
    fn from(s: PostgresStorage) -> Self {
        Self::Postgres(s)
    }
}

#[cfg(all(feature = "redis", feature = "mysql"))]
impl From<TieredStorage<RedisStorage, MySqlStorage>> for AnyStorage {
    fn from(s: TieredStorage<RedisStorage, MySqlStorage>) -> Self {
        Self::Tiered(s)
    }
}

/// The URL without its password, for error messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(start), Some(at)) if at > start => {
            let auth = &url[start + 3..at];
            match auth.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..start + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Calls the same method on whichever store `self` holds.
macro_rules! each {
    ($self:expr, $s:ident => $call:expr) => {
        match $self {
            AnyStorage::Memory($s) => $call,
            #[cfg(feature = "redis")]
            AnyStorage::Redis($s) => $call,
            #[cfg(feature = "mysql")]
            AnyStorage::MySql($s) => $call,
            #[cfg(feature = "postgres")]
            AnyStorage::Postgres($s) => $call,
            #[cfg(all(feature = "redis", feature = "mysql"))]
            AnyStorage::Tiered($s) => $call,
        }
    };
}

impl Storage for AnyStorage {
    async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        each!(self, s => s.submit(ns, task).await)
    }

    async fn submit_many(&self, ns: &Namespace, tasks: Vec<NewTask>) -> Result<Vec<Result<Submitted>>> {
        each!(self, s => s.submit_many(ns, tasks).await)
    }

    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        each!(self, s => s.claim(ns, worker, plan, lease).await)
    }

    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        each!(self, s => s.heartbeat(ns, leases, lease).await)
    }

    async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        each!(self, s => s.finish(ns, lease, finish).await)
    }

    async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        each!(self, s => s.finish_many(ns, items).await)
    }

    async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        each!(self, s => s.cancel(ns, id).await)
    }

    async fn get(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        each!(self, s => s.get(ns, id).await)
    }

    async fn list(&self, ns: &Namespace, query: ListQuery) -> Result<Page> {
        each!(self, s => s.list(ns, query).await)
    }

    async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        each!(self, s => s.delete(ns, id).await)
    }

    async fn counts(&self, ns: &Namespace) -> Result<StateCounts> {
        each!(self, s => s.counts(ns).await)
    }

    async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        each!(self, s => s.requeue(ns, id).await)
    }

    async fn reap(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        each!(self, s => s.reap(ns, limit).await)
    }

    async fn trim(&self, ns: &Namespace, retention: &Retention, limit: usize) -> Result<u64> {
        each!(self, s => s.trim(ns, retention, limit).await)
    }

    async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        each!(self, s => s.acquire_leadership(ns, worker, ttl).await)
    }

    async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        each!(self, s => s.release_leadership(ns, term).await)
    }

    async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        each!(self, s => s.leader(ns).await)
    }

    async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        each!(self, s => Storage::now(s, ns).await)
    }

    async fn max_payload(&self) -> Result<usize> {
        each!(self, s => s.max_payload().await)
    }

    async fn housekeeping(&self, ns: &Namespace) -> Result<()> {
        each!(self, s => s.housekeeping(ns).await)
    }

    async fn wait_for_work(&self, ns: &Namespace, queues: &[QueueName], max_wait: Duration) -> Result<()> {
        each!(self, s => s.wait_for_work(ns, queues, max_wait).await)
    }
}

impl QueueControl for AnyStorage {
    async fn pause_queue(&self, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
        each!(self, s => s.pause_queue(ns, queue, paused).await)
    }

    async fn set_queue_limits(&self, ns: &Namespace, queue: &QueueName, limits: &QueueLimits) -> Result<()> {
        each!(self, s => s.set_queue_limits(ns, queue, limits).await)
    }

    async fn queues(&self, ns: &Namespace) -> Result<Vec<QueueInfo>> {
        each!(self, s => s.queues(ns).await)
    }
}

impl RunNow for AnyStorage {
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        each!(self, s => s.run_now(ns, id).await)
    }
}

impl Presence for AnyStorage {
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        each!(self, s => s.announce(ns, worker, names, ttl).await)
    }

    async fn workers(&self, ns: &Namespace) -> Result<Vec<executor_core::query::WorkerInfo>> {
        each!(self, s => s.workers(ns).await)
    }
}

impl ScheduleStore for AnyStorage {
    async fn put_schedule(&self, ns: &Namespace, schedule: &Schedule) -> Result<()> {
        each!(self, s => s.put_schedule(ns, schedule).await)
    }

    async fn schedules(&self, ns: &Namespace) -> Result<Vec<ScheduleEntry>> {
        each!(self, s => s.schedules(ns).await)
    }

    async fn remove_schedule(&self, ns: &Namespace, name: &str) -> Result<bool> {
        each!(self, s => s.remove_schedule(ns, name).await)
    }

    async fn pause_schedule(&self, ns: &Namespace, name: &str, paused: bool) -> Result<bool> {
        each!(self, s => s.pause_schedule(ns, name, paused).await)
    }

    async fn advance_schedule(&self, ns: &Namespace, name: &str, advance: &Advance) -> Result<bool> {
        each!(self, s => s.advance_schedule(ns, name, advance).await)
    }
}

impl HistoryStore for AnyStorage {
    async fn add_history(&self, ns: &Namespace, counts: &[HistoryCount]) -> Result<()> {
        each!(self, s => s.add_history(ns, counts).await)
    }

    async fn history(&self, ns: &Namespace, since: Timestamp) -> Result<Vec<HistoryBucket>> {
        each!(self, s => s.history(ns, since).await)
    }

    async fn trim_history(&self, ns: &Namespace, before: Timestamp) -> Result<u64> {
        each!(self, s => s.trim_history(ns, before).await)
    }
}

/// Calls a tier method on a store that can be a tier; a tiered store
/// cannot be a tier of another, and says so.
macro_rules! tier {
    ($self:expr, $method:literal, $s:ident => $call:expr) => {
        match $self {
            AnyStorage::Memory($s) => $call,
            #[cfg(feature = "redis")]
            AnyStorage::Redis($s) => $call,
            #[cfg(feature = "mysql")]
            AnyStorage::MySql($s) => $call,
            #[cfg(feature = "postgres")]
            AnyStorage::Postgres($s) => $call,
            #[cfg(all(feature = "redis", feature = "mysql"))]
            AnyStorage::Tiered(_) => Err(Error::unsupported(
                $method,
                "a tiered store cannot be a tier of another; give TieredStorage a memory:, redis://, mysql:// or postgres:// store",
            )),
        }
    };
}

/// A memory, Redis or MySQL store can be either tier of a
/// [`TieredStorage`], chosen by URL: `TieredStorage::new(AnyStorage::connect(hot).await?,
/// AnyStorage::connect(cold).await?)`. A tiered `AnyStorage` answers
/// [`Error::Unsupported`].
impl TierStorage for AnyStorage {
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        tier!(self, "due_before", s => s.due_before(ns, before, limit).await)
    }

    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        tier!(self, "import", s => s.import(ns, record).await)
    }

    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        tier!(self, "remove", s => s.remove(ns, id, fence).await)
    }
}

/// Joins a PostgreSQL transaction when this is a `postgres://` store; any
/// other store refuses with [`Error::Unsupported`], since its tasks do not
/// live in that database.
#[cfg(feature = "postgres")]
impl executor_core::storage::SubmitIn<executor_postgres::sqlx::PgConnection> for AnyStorage {
    async fn submit_in(
        &self,
        conn: &mut executor_postgres::sqlx::PgConnection,
        ns: &Namespace,
        task: NewTask,
    ) -> Result<Submitted> {
        match self {
            Self::Postgres(s) => s.submit_in(conn, ns, task).await,
            other => Err(Error::unsupported(
                "submit_in",
                format!(
                    "this is a {} store; a PostgreSQL transaction joins a postgres:// store only",
                    other.kind()
                ),
            )),
        }
    }
}

/// Joins a MySQL transaction when this is a `mysql://` store; any other
/// store refuses with [`Error::Unsupported`].
#[cfg(feature = "mysql")]
impl executor_core::storage::SubmitIn<executor_mysql::sqlx::MySqlConnection> for AnyStorage {
    async fn submit_in(
        &self,
        conn: &mut executor_mysql::sqlx::MySqlConnection,
        ns: &Namespace,
        task: NewTask,
    ) -> Result<Submitted> {
        match self {
            Self::MySql(s) => s.submit_in(conn, ns, task).await,
            other => Err(Error::unsupported(
                "submit_in",
                format!("this is a {} store; a MySQL transaction joins a mysql:// store only", other.kind()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("mysql://root:secret@db:3306/app"), "mysql://root:***@db:3306/app");
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }
}
