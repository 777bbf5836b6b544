//! Shared by the PostgreSQL test files: connecting to `POSTGRES_URL` (or
//! failing with how to start PostgreSQL), fresh namespaces, cleanup, and the
//! lock that keeps the heavy tests apart.

use executor_core::{Namespace, testing};
use reliable_executor_postgres::{PostgresOptions, PostgresStorage};
use sqlx::{PgPool, postgres::PgPoolOptions};

/// Held for its whole run by each test that loads the machine (child
/// processes, many claimers) or checks a latency, so no two of them run at
/// once in this binary.
pub(crate) async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

/// `POSTGRES_URL`, or the local PostgreSQL the scripts start.
pub(crate) fn url() -> String {
    std::env::var("POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

pub(crate) fn down(e: impl std::fmt::Display) -> ! {
    panic!(
        "PostgreSQL at {} does not answer ({e}).\nStart it with `source scripts/services.sh && \
         ensure_postgres` (installs postgresql when missing), or point POSTGRES_URL at a server.",
        url()
    )
}

/// A small pool on `POSTGRES_URL`; panics saying how to start the server.
pub(crate) async fn pool(max: u32) -> PgPool {
    let opts = PgPoolOptions::new().max_connections(max).acquire_timeout(std::time::Duration::from_secs(5));
    match opts.connect(&url()).await {
        Ok(p) => p,
        Err(e) => down(e),
    }
}

/// A migrated storage on its own small pool.
pub(crate) async fn storage() -> PostgresStorage {
    match PostgresOptions::new().max_connections(6).open(pool(9).await).await {
        Ok(s) => s,
        Err(e) => down(e),
    }
}

/// A storage and a namespace no other test uses.
pub(crate) async fn fresh() -> (PostgresStorage, Namespace) {
    (storage().await, testing::unique_namespace("pg"))
}

/// Deletes the namespace's rows. Retries retryable failures.
pub(crate) async fn cleanup(storage: &PostgresStorage, ns: &Namespace) {
    for _ in 0..5 {
        match storage.purge(ns).await {
            Ok(_) => return,
            Err(e) if e.is_retryable() => continue,
            Err(e) => {
                eprintln!("cleanup of {ns} failed: {e}");
                return;
            }
        }
    }
    eprintln!("cleanup of {ns} kept failing");
}
