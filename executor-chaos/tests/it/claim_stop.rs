//! A worker stopped inside its claim: `chaos run --faults
//! claim-stop` on a private MariaDB makes a worker `SIGSTOP` itself while a
//! reply of its claim is pending, for 4 s (two leases). Before the fix the
//! claim's transaction stayed open with its rows locked; the leader's reap
//! and healthy workers' heartbeats and finishes waited, and tasks healthy
//! workers had completed were reaped and run again. The checker counts any
//! re-run of an attempt that returned on a worker never killed or paused as
//! a "healthy task re-run" (a violation); re-runs of the stopped worker's
//! own tasks are allowed.

use crate::common::{chaos_run, figure};

#[test]
fn a_worker_stopped_inside_its_claim_holds_nothing_healthy_workers_need() -> Result<(), String> {
    let _one = crate::common::one_at_a_time();
    let summary = chaos_run(&[
        "--storage",
        "mysql",
        "--workers",
        "3",
        "--tasks",
        "1500",
        "--seconds",
        "14",
        "--faults",
        "claim-stop",
        "--fault-every-ms",
        "500",
        "--victims",
        "0",
        "--drain-seconds",
        "40",
    ])?;
    assert!(summary.contains("RESULT: PASS"), "{summary}");
    assert!(
        figure(&summary, "claim pauses (SIGSTOP inside a claim, past the lease):").is_some_and(|n| n >= 2),
        "too few pauses inside a claim: {summary}"
    );
    assert_eq!(figure(&summary, "healthy tasks re-run:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "stuck RUNNING at the end:"), Some(0), "{summary}");
    assert_eq!(figure(&summary, "lost:"), Some(0), "{summary}");
    Ok(())
}
