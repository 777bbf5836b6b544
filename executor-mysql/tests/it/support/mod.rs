//! Shared by the MySQL test files: connecting to `MYSQL_URL` (or failing
//! with how to start MariaDB), fresh namespaces, cleanup, and the lock that
//! keeps the heavy tests apart.

use executor_core::{Namespace, testing};
use reliable_executor_mysql::MySqlStorage;
use sqlx::MySqlPool;

/// Held for its whole run by each test that loads the machine (child
/// processes, many claimers) or checks a latency: `first_start`,
/// `two_processes`, `paused_claimer`, `migrations_and_wake`,
/// `connection_loss`, `races`' claimers and the shared transaction tests
/// (one lock, the SQL core's). No two of them run at once in this binary,
/// as when each file was a test binary of its own.
pub(crate) async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    executor_sql::testing::serial().await
}

/// The test server of this binary, for the SQL core's helpers and the
/// tests every dialect shares (`executor_sql::testing`).
pub(crate) struct Db;

impl executor_sql::testing::TestDb for Db {
    type Dialect = reliable_executor_mysql::MySqlDialect;
    const SHORT: &'static str = "my";
    const PLAIN_TEXT: &'static str = "ssl-mode=disabled";
    const POOL: u32 = 6;
    const URL_VAR: &'static str = "MYSQL_URL";
    const DEFAULT_URL: &'static str = "mysql://root@127.0.0.1:3306/test";
    const START: &'static str =
        "`source scripts/services.sh && ensure_mariadb` (installs mariadb-server when missing)";
    const CONNECTION_ID: &'static str = "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id";
    const KILL_TASKS: usize = 1000;

    fn kill(id: i64) -> String {
        format!("KILL {id}")
    }
}

/// `MYSQL_URL`, or the local server the scripts start.
pub(crate) fn url() -> String {
    executor_sql::testing::url::<Db>()
}

/// A small pool on `MYSQL_URL`; panics saying how to start the server.
pub(crate) async fn pool(max: u32) -> MySqlPool {
    executor_sql::testing::pool::<Db>(max).await
}

/// A migrated storage on its own small pool.
pub(crate) async fn storage() -> MySqlStorage {
    executor_sql::testing::storage::<Db>().await
}

/// A storage and a namespace no other test uses.
pub(crate) async fn fresh() -> (MySqlStorage, Namespace) {
    executor_sql::testing::fresh::<Db>().await
}

/// Deletes the namespace's rows, retrying retryable failures.
pub(crate) async fn cleanup(storage: &MySqlStorage, ns: &Namespace) {
    executor_sql::testing::cleanup(storage, ns).await
}

/// `MYSQL_URL` with its database replaced by `db`.
pub(crate) fn url_with_database(db: &str) -> String {
    let base = url();
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h.to_owned(), format!("?{q}")),
        None => (base.clone(), String::new()),
    };
    let server = head.rsplit_once('/').map_or(head.as_str(), |(s, _)| s).to_owned();
    format!("{server}/{db}{query}")
}

/// An empty database of its own, dropped by [`EmptyDatabase::drop_now`]
/// (or, if a test panics first, on drop, best effort).
pub(crate) struct EmptyDatabase {
    pub(crate) name: String,
    pub(crate) url: String,
    admin: MySqlPool,
    dropped: bool,
}

impl EmptyDatabase {
    /// Creates `rex_<what>_<unique>`.
    pub(crate) async fn create(what: &str) -> Result<Self, sqlx::Error> {
        let admin = pool(1).await;
        let unique = testing::unique_namespace("x").as_str().replace(['-', ':', '.'], "_");
        let name = format!("rex_{what}_{unique}");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&admin).await?;
        let url = url_with_database(&name);
        Ok(Self { name, url, admin, dropped: false })
    }

    /// A pool on this database.
    pub(crate) async fn pool(&self, max: u32) -> Result<MySqlPool, sqlx::Error> {
        sqlx::mysql::MySqlPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect(&self.url)
            .await
    }

    /// Drops the database.
    pub(crate) async fn drop_now(mut self) -> Result<(), sqlx::Error> {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {}", self.name)))
            .execute(&self.admin)
            .await?;
        self.dropped = true;
        Ok(())
    }
}

impl Drop for EmptyDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        // A test that panicked before `drop_now`: drop it with the mysql
        // client (the default local server), since no runtime may be left
        // to run sqlx on.
        let _ = std::process::Command::new("mysql")
            .args(["-uroot", "-h127.0.0.1", "-e", &format!("DROP DATABASE IF EXISTS {}", self.name)])
            .output();
    }
}
