//! Shared by the PostgreSQL test files: connecting to `POSTGRES_URL` (or
//! failing with how to start PostgreSQL), fresh namespaces, cleanup, and the
//! lock that keeps the heavy tests apart.

use executor_core::Namespace;
use reliable_executor_postgres::PostgresStorage;
use sqlx::PgPool;

/// Held for its whole run by each test that loads the machine (child
/// processes, many claimers) or checks a latency, so no two of them run at
/// once in this binary.
pub(crate) async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    executor_sql::testing::serial().await
}

/// The test server of this binary, for the SQL core's helpers and the
/// tests every dialect shares (`executor_sql::testing`).
pub(crate) struct Db;

impl executor_sql::testing::TestDb for Db {
    type Dialect = reliable_executor_postgres::PostgresDialect;
    const SHORT: &'static str = "pg";
    const PLAIN_TEXT: &'static str = "sslmode=disable";
    const POOL: u32 = 9;
    const URL_VAR: &'static str = "POSTGRES_URL";
    const DEFAULT_URL: &'static str = "postgres://postgres@127.0.0.1:5432/test";
    const START: &'static str =
        "`source scripts/services.sh && ensure_postgres` (installs postgresql when missing)";
    const CONNECTION_ID: &'static str = "SELECT CAST(pg_backend_pid() AS BIGINT) AS id";
    const KILL_TASKS: usize = 400;

    fn kill(id: i64) -> String {
        format!("SELECT pg_terminate_backend({id}) AS killed")
    }
}

/// `POSTGRES_URL`, or the local server the scripts start.
pub(crate) fn url() -> String {
    executor_sql::testing::url::<Db>()
}

/// Fails the test: the server does not answer, and how to start it.
pub(crate) fn down(e: impl std::fmt::Display) -> ! {
    executor_sql::testing::down::<Db>(e)
}

/// A small pool on `POSTGRES_URL`; panics saying how to start the server.
pub(crate) async fn pool(max: u32) -> PgPool {
    executor_sql::testing::pool::<Db>(max).await
}

/// A migrated storage on its own small pool.
pub(crate) async fn storage() -> PostgresStorage {
    executor_sql::testing::storage::<Db>().await
}

/// A storage and a namespace no other test uses.
pub(crate) async fn fresh() -> (PostgresStorage, Namespace) {
    executor_sql::testing::fresh::<Db>().await
}

/// Deletes the namespace's rows, retrying retryable failures.
pub(crate) async fn cleanup(storage: &PostgresStorage, ns: &Namespace) {
    executor_sql::testing::cleanup(storage, ns).await
}
