//! Shared by the Redis test files: connecting with a message that says how
//! to start Redis when it does not answer, and the lock that keeps the heavy
//! tests apart.

#![allow(unreachable_pub, reason = "pub items of a private module, used by the test files")]

pub mod corrupt;
pub mod server;

use executor_core::Namespace;
use reliable_executor_redis::{RedisStorage, RedisStorageBuilder};

/// `REDIS_URL`, default `redis://127.0.0.1:6379`.
pub fn url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// Connects a builder, failing the test with how to start Redis.
pub async fn connect_with(builder: RedisStorageBuilder, url: &str) -> RedisStorage {
    match builder.connect().await {
        Ok(s) => s,
        Err(e) => panic!(
            "Redis at {url} does not answer: {e}\n\
             Start one with `redis-server --port 6379 --save '' --appendonly no --daemonize yes`, \
             or run `scripts/test.sh`, which starts it (and installs it when missing); \
             point REDIS_URL elsewhere to use another server."
        ),
    }
}

/// A storage on `REDIS_URL` with default settings.
pub async fn connect() -> RedisStorage {
    let url = url();
    connect_with(RedisStorage::builder(&url), &url).await
}

/// A storage and a namespace no other test uses.
pub async fn fresh() -> (RedisStorage, Namespace) {
    (connect().await, executor_core::testing::unique_namespace("redis"))
}

/// Held for its whole run by each test that loads the machine or times a
/// recovery (`restart`, `two_processes`), so no two of them run at once in
/// this binary, as when each file was a test binary of its own.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

/// The scripts' shared prelude as the storage assembles it: the parts in
/// `lua/common`, in the order of their file names (which the storage's own
/// order follows: a unit test of `src/scripts.rs` checks).
pub fn prelude() -> &'static str {
    static PRELUDE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/lua/common");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|entry| entry.unwrap_or_else(|e| panic!("{dir}: {e}")).path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "lua"))
            .collect();
        files.sort();
        files
            .iter()
            .map(|path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
            .collect()
    });
    &PRELUDE
}

/// Deletes the namespace's keys.
pub async fn cleanup(storage: &RedisStorage, ns: &Namespace) {
    if let Err(e) = storage.purge(ns).await {
        eprintln!("cleanup of {ns} failed: {e}");
    }
}
