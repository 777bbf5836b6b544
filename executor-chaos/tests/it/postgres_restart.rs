//! PostgreSQL restarts mid-claim: a private cluster (`initdb` in a temp dir
//! on a free loopback port) is killed with `kill -9` of its postmaster and
//! shut down cleanly (fast shutdown), in turn, and has every backend of the
//! run's database terminated (`pg_terminate_backend`), while three workers
//! claim continuously. A claim is one autocommit statement: one cut off
//! before its commit changed nothing, one cut off after it leaves its tasks
//! leased to a live worker that never heard of them, and the reaper gives
//! them back a lease later. Nothing is lost, no fence is handed out twice,
//! no two attempts of a task overlap.

use crate::common::{chaos_run, figure};

#[test]
fn postgres_restarts_and_terminated_backends_mid_claim() -> Result<(), String> {
    let _one = crate::common::one_at_a_time();
    let summary = chaos_run(&[
        "--storage",
        "postgres",
        "--workers",
        "3",
        "--tasks",
        "2500",
        "--seconds",
        "20",
        "--faults",
        "restart,drop",
        "--fault-every-ms",
        "1500",
        "--drain-seconds",
        "60",
    ])?;
    assert!(summary.contains("RESULT: PASS"), "{summary}");
    // Restarts alternate `kill -9` and a clean shutdown: two or more is both.
    assert!(figure(&summary, "restarts:").is_some_and(|n| n >= 2), "too few restarts: {summary}");
    assert!(
        figure(&summary, "dropped connection rounds:").is_some_and(|n| n >= 2),
        "too few dropped connections: {summary}"
    );
    assert_eq!(figure(&summary, "fault injections that failed:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "lost:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "overlapping:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "accepted stale writes:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "healthy tasks re-run:"), Some(0), "{summary}");
    Ok(())
}

/// The harness's private PostgreSQL itself: a row committed before a
/// `kill -9` of the postmaster is there after the restart on the same port
/// and data directory; the killed postmaster's children (backends,
/// checkpointer, ...) are all gone before the new one starts; a clean
/// shutdown leaves no process either.
#[test]
fn a_private_postgres_survives_kill_9_and_leaves_no_process_behind()
-> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use std::time::Duration;

    use executor_chaos::{
        postgres::{children, psql},
        process::Signal,
        server::{Backend, PrivateServer},
    };

    let _one = crate::common::one_at_a_time();
    let mut server = PrivateServer::start(Backend::Postgres)?;
    let port = server.port();
    assert!(server.url().ends_with(&format!("127.0.0.1:{port}/chaos")), "{}", server.url());
    psql(port, "chaos", "CREATE TABLE kept (n INT); INSERT INTO kept VALUES (7)")?;
    let pid = server.pid().ok_or("no postmaster")?;
    let before = children(pid);
    assert!(!before.is_empty(), "a running postmaster has children");

    server.down(Signal::Kill);
    let alive: Vec<u32> = before.iter().copied().filter(|p| is_running(*p)).collect();
    assert_eq!(alive, Vec::<u32>::new(), "children of the killed postmaster still running");
    assert!(!server.answers());
    server.up()?;
    assert_eq!(psql(port, "chaos", "SELECT n FROM kept")?.trim(), "7");
    assert_eq!(server.restarts(), 1);

    let pid = server.pid().ok_or("no postmaster")?;
    let before = children(pid);
    server.down(Signal::Term);
    std::thread::sleep(Duration::from_millis(50));
    assert!(!is_running(pid), "the postmaster outlived its clean shutdown");
    let alive: Vec<u32> = before.iter().copied().filter(|p| is_running(*p)).collect();
    assert_eq!(alive, Vec::<u32>::new(), "children outlived the clean shutdown");
    Ok(())
}

/// Whether `pid` runs (exists and is not a zombie waiting for its reaper).
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()))
        .is_some_and(|state| state != 'Z')
}
