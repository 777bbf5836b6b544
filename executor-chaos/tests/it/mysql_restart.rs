//! MySQL restart mid-claim: a private mariadbd (fresh datadir on a free
//! loopback port) is restarted (clean shutdown and `kill -9`, alternating)
//! and has its connections `KILL`ed while three workers claim continuously.
//! Claims in flight roll back: nothing is lost, no fence is handed out twice,
//! no two attempts of a task overlap.

use std::process::Command;

#[test]
fn mysql_restarts_and_killed_connections_mid_claim() -> Result<(), String> {
    let _one = crate::common::one_at_a_time();
    let out = Command::new(env!("CARGO_BIN_EXE_chaos"))
        .args(["run", "--storage", "mysql", "--workers", "3", "--tasks", "2500", "--seconds", "20"])
        .args(["--faults", "restart,drop", "--fault-every-ms", "1500", "--drain-seconds", "60"])
        .output()
        .map_err(|e| format!("cannot start the chaos binary: {e}"))?;
    let summary = String::from_utf8_lossy(&out.stdout);
    println!("{summary}");
    assert!(
        out.status.success() && summary.contains("RESULT: PASS"),
        "{summary}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figure = |key: &str| -> u64 {
        summary
            .lines()
            .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    assert!(figure("restarts:") >= 2, "too few restarts: {summary}");
    assert!(figure("dropped connection rounds:") >= 2, "too few dropped connections: {summary}");
    assert_eq!(figure("lost:"), 0);
    assert_eq!(figure("overlapping:"), 0);
    Ok(())
}
