//! Shared by the MySQL test files: connecting to `MYSQL_URL` (or failing
//! with how to start MariaDB), fresh namespaces, cleanup.

#![allow(dead_code, reason = "each test file uses a different part of this module")]

use executor_core::{Namespace, testing};
use executor_mysql::{MySqlOptions, MySqlStorage};
use sqlx::{MySqlPool, mysql::MySqlPoolOptions};

/// `MYSQL_URL`, or the local MariaDB the scripts start.
pub(crate) fn url() -> String {
    std::env::var("MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned())
}

fn down(e: impl std::fmt::Display) -> ! {
    panic!(
        "MySQL/MariaDB at {} does not answer ({e}).\nStart it with `source scripts/services.sh && \
         ensure_mariadb` (installs mariadb-server when missing), or point MYSQL_URL at a server.",
        url()
    )
}

/// A small pool on `MYSQL_URL`; panics saying how to start the server.
pub(crate) async fn pool(max: u32) -> MySqlPool {
    let opts =
        MySqlPoolOptions::new().max_connections(max).acquire_timeout(std::time::Duration::from_secs(5));
    match opts.connect(&url()).await {
        Ok(p) => p,
        Err(e) => down(e),
    }
}

/// A migrated storage on its own small pool.
pub(crate) async fn storage() -> MySqlStorage {
    match MySqlOptions::new().max_connections(6).open(pool(6).await).await {
        Ok(s) => s,
        Err(e) => down(e),
    }
}

/// A storage and a namespace no other test uses.
pub(crate) async fn fresh() -> (MySqlStorage, Namespace) {
    (storage().await, testing::unique_namespace("my"))
}

/// Deletes the namespace's rows. Retries retryable failures: after a test
/// that kills connections, a kept connection may fail once.
pub(crate) async fn cleanup(storage: &MySqlStorage, ns: &Namespace) {
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
