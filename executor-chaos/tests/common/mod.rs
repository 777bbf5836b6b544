//! Helpers shared by the fault tests.
#![allow(dead_code, unreachable_pub, reason = "each test binary uses a subset")]

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use executor_chaos::{
    ledger::{Event, read_dir},
    process::Owned,
};

pub type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

pub fn mysql_url() -> String {
    std::env::var("MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned())
}

pub fn unique_ns(prefix: &str) -> String {
    format!("{prefix}-{}-{:06x}", std::process::id(), rand::random::<u32>() >> 8)
}

/// Starts `chaos worker` with extra environment (e.g. libfaketime's
/// `LD_PRELOAD`; preloading rather than the `faketime` wrapper keeps the
/// worker our direct child, so it is killed on drop).
pub fn spawn_worker(env: &[(&str, &str)], args: &[&str], out: &Path) -> std::io::Result<Owned> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chaos"));
    cmd.envs(env.iter().copied());
    let log = std::fs::File::create(out)?;
    cmd.arg("worker").args(args).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    Ok(Owned::new(cmd.spawn()?, "worker"))
}

/// Polls `f` every 20 ms until it returns `Some`, at most `timeout`.
pub fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The events in the ledgers of `dir` and of its subdirectories.
pub fn events(dir: &Path) -> Vec<Event> {
    let mut out = read_dir(dir).map(|(e, _)| e).unwrap_or_default();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if sub.path().is_dir() {
            out.extend(read_dir(&sub.path()).map(|(e, _)| e).unwrap_or_default());
        }
    }
    out
}
