//! A stalled machine: the whole run (controller, workers and the private
//! Redis) frozen with `SIGSTOP` for 3 s, longer than the 2 s lease, by
//! nobody the run knows of, as a VM paused by its host or a CI machine
//! starved of CPU. Found by CI: a run without faults on a loaded machine
//! counted 9 missed cron ticks and 11 re-runs of tasks that had returned as
//! violations, though no leader and no lease could have been kept while
//! nothing ran. The controller's leader samples now record such a gap as a
//! stall (`stall`/`stall_end`), which explains the ticks and re-runs it
//! covers like a store restart; the run must still lose nothing and never
//! run one task twice at once.

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use executor_chaos::process::{Owned, Signal, signal};

use crate::common::{figure, one_at_a_time, wait_for};

/// `pid` and every process below it.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while let Some(&p) = all.get(i) {
        let out = Command::new("pgrep").arg("-P").arg(p.to_string()).output();
        let children = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        all.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        i += 1;
    }
    all
}

#[test]
fn a_frozen_machine_is_a_stall_not_a_violation() -> Result<(), String> {
    let _one = one_at_a_time();
    let dir = std::env::temp_dir().join(format!("chaos-stall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let out_path = dir.join("summary.txt");
    let out = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
    let child = Command::new(env!("CARGO_BIN_EXE_chaos"))
        .args(["run", "--storage", "redis", "--workers", "2", "--tasks", "600", "--seconds", "8"])
        .args(["--faults", "none", "--victims", "0", "--drain-seconds", "40"])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the chaos binary: {e}"))?;
    let mut run = Owned::new(child, "chaos run");
    // The private Redis and both workers are up: the run is under way.
    let up = wait_for(Duration::from_secs(60), || (tree(run.pid()).len() >= 4).then_some(()));
    if up.is_none() {
        return Err(format!("the run did not start its store and workers: {:?}", tree(run.pid())));
    }
    let frozen = tree(run.pid());
    for &p in &frozen {
        signal(p, Signal::Stop);
    }
    std::thread::sleep(Duration::from_secs(3));
    for &p in frozen.iter().rev() {
        signal(p, Signal::Cont);
    }
    let done = wait_for(Duration::from_secs(120), || run.exited().then_some(()));
    let summary = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    println!("{summary}");
    if done.is_none() {
        return Err(format!("the run did not end within 120 s after the freeze:\n{summary}"));
    }
    assert!(summary.contains("RESULT: PASS"), "{summary}");
    let stall = "store or machine stalls (leader samples unanswered over 1000 ms, no fault's doing): n=";
    let line = summary.lines().find_map(|l| l.strip_prefix(stall)).unwrap_or_default();
    let max: u64 = line
        .split("max=")
        .nth(1)
        .and_then(|m| m.split_whitespace().next())
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    assert!(max >= 2_500, "the 3 s freeze was not seen as a stall: {summary}");
    for key in ["lost:", "overlapping:", "accepted stale writes:", "stuck RUNNING at the end:"] {
        assert_eq!(figure(&summary, key), Some(0), "{key} {summary}");
    }
    Ok(())
}
