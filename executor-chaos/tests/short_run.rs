//! The short chaos run CI does: Redis then MySQL, each about 40 s of kills,
//! pauses, store restarts and dropped connections over a few thousand tasks
//! and 3 worker processes. Private servers on free loopback ports; the
//! summary is printed (run with `--nocapture` to see it).

use std::process::Command;

fn chaos_run(storage: &str, tasks: &str, seconds: &str) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_chaos"))
        .args(["run", "--storage", storage, "--workers", "3", "--tasks", tasks, "--seconds", seconds])
        .args(["--drain-seconds", "60"])
        .output()
        .map_err(|e| format!("cannot start the chaos binary: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    if !out.status.success() {
        return Err(format!(
            "chaos run on {storage} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(stdout)
}

fn figure(summary: &str, key: &str) -> Option<u64> {
    summary.lines().find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
}

#[test]
fn short_chaos_run_redis_and_mysql() -> Result<(), String> {
    for (storage, tasks) in [("redis", "6000"), ("mysql", "4000")] {
        let summary = chaos_run(storage, tasks, "40")?;
        assert!(summary.contains("RESULT: PASS"), "{summary}");
        assert_eq!(figure(&summary, "lost:"), Some(0), "{summary}");
        assert_eq!(figure(&summary, "overlapping:"), Some(0), "{summary}");
        assert_eq!(figure(&summary, "accepted stale writes:"), Some(0), "{summary}");
        let faults: u64 = ["kills:", "pauses:", "restarts:", "dropped connection rounds:"]
            .iter()
            .filter_map(|k| figure(&summary, k))
            .sum();
        assert!(faults >= 5, "too few faults were injected to mean anything: {summary}");
    }
    Ok(())
}
