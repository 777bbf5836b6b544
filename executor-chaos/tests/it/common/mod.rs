//! Helpers shared by the fault tests, and the lock that runs them one at a time.
#![allow(unreachable_pub, reason = "pub items of a private module, used by the test files")]

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

/// The fault tests start private servers and worker processes and check
/// timings; on CI's 2 cores they must not share the machine. Each holds this
/// lock for its whole run (only the pure proptests of `bad_input` do not),
/// so they run one at a time, as when each file was a test binary of its own.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// [`ONE_AT_A_TIME`] for a `#[test]` function (not inside a runtime).
pub fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.blocking_lock()
}

/// [`ONE_AT_A_TIME`] for a `#[tokio::test]`.
pub async fn one_at_a_time_async() -> tokio::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().await
}

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

/// Runs `chaos run` with `args`; returns its summary (stdout), printed, or
/// the failure with both streams.
pub fn chaos_run(args: &[&str]) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_chaos"))
        .arg("run")
        .args(args)
        .output()
        .map_err(|e| format!("cannot start the chaos binary: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    if !out.status.success() {
        return Err(format!(
            "chaos run {args:?} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(stdout)
}

/// The first number after `key` at the start of a summary line.
pub fn figure(summary: &str, key: &str) -> Option<u64> {
    summary
        .lines()
        .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.trim_end_matches(',').parse().ok())
}

/// The summary's `victim outcomes` line.
pub fn victim_outcomes(summary: &str) -> &str {
    summary.lines().find(|l| l.starts_with("victim outcomes:")).unwrap_or_default()
}
