//! The summary a run prints: one `key: value` line per figure, then `RESULT`.

use std::time::Duration;

use crate::{
    check::{Report, percentile},
    controller::RunArgs,
    fleet::backend_name,
    server::Backend,
};

/// Prints the figures of a run and its verdict; `restarts` counts each
/// private server's restarts.
pub fn print_summary(
    args: &RunArgs,
    r: &Report,
    elapsed: Duration,
    drain: Duration,
    submit_errors: (usize, Option<String>),
    restarts: &[(&str, u32)],
) {
    let fault = |k: &str| r.faults.get(k).copied().unwrap_or(0);
    println!("== chaos summary ({})", backend_name(args.storage));
    println!("storage: {}", backend_name(args.storage));
    println!("workers: {} (concurrency {}, lease {} ms)", args.workers, args.concurrency, args.lease_ms);
    println!(
        "run: {:.1} s of faults, {:.1} s to drain, {:.1} s in all",
        args.seconds as f64,
        drain.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    println!("tasks: {}", r.tasks);
    println!("attempts: {}", r.attempts);
    println!("kills: {}", fault("kill"));
    println!("pauses: {}", fault("stop"));
    let total: u32 = restarts.iter().map(|(_, n)| n).sum();
    if restarts.len() > 1 {
        let each: Vec<String> = restarts.iter().map(|(server, n)| format!("{server} {n}")).collect();
        println!("restarts: {total} ({})", each.join(", "));
    } else {
        println!("restarts: {total}");
    }
    println!("dropped connection rounds: {}", fault("drop"));
    if args.faults.contains(&crate::controller::Fault::ClaimStop) && args.storage.pauses_inside_claims() {
        println!("claim pauses (SIGSTOP inside a claim, past the lease): {}", fault("claim_stop"));
    }
    if fault("first_start") + fault("first_start_failed") > 0 {
        println!(
            "concurrent first starts ({} processes, fresh database each): {} ok, {} failed",
            args.first_start_processes,
            fault("first_start"),
            fault("first_start_failed")
        );
    }
    println!("fault injections that failed: {}", fault("fault_error"));
    let mut stalls = r.stalls_ms.clone();
    println!(
        "store or machine stalls (leader samples unanswered over {} ms, no fault's doing): n={} total={} ms max={} ms",
        crate::cron::STALL_MS,
        stalls.len(),
        stalls.iter().sum::<u64>(),
        percentile(&mut stalls, 100)
    );
    println!("re-runs: {} {:?}", r.reruns, r.rerun_causes);
    println!("refused stale writes: {}", r.refused_stale);
    println!("leases reported lost: {}", r.lost_leases);
    println!("aborted handler futures: {}", r.aborted);
    println!("orphan claims (claimed, never started): {}", r.orphan_claims);
    println!("finish writes failed (store unreachable): {}", r.finish_errors);
    println!("submit calls failed (store unreachable): {}", submit_errors.0);
    if let Some(e) = &submit_errors.1 {
        println!("first submit error: {e}");
    }
    println!("paused overlaps (late write refused): {}", r.paused_overlaps);
    println!("stale starts (paused between claim and start, write refused): {}", r.stale_starts);
    println!("accepted stale writes: {}", r.accepted_stale);
    println!("lost: {}", r.lost);
    println!("stuck RUNNING at the end: {}", r.stuck_running);
    println!("healthy tasks re-run: {}", r.healthy_reruns);
    println!("overlapping: {}", r.overlapping);
    println!("final states: {:?}", r.states);
    if args.storage == Backend::Tiered || r.delayed > 0 {
        let mut late = r.start_lateness_ms.clone();
        println!("final tiers: {:?}", r.final_tiers);
        println!("waiting peak per tier: {:?}", r.waiting_peak);
        println!(
            "delayed tasks: {} (due past the {} ms horizon: cold, then promoted)",
            r.delayed,
            crate::tiered::HORIZON.as_millis()
        );
        println!("delayed tasks started before due: {}", r.early_starts);
        println!(
            "delayed tasks, first start after due (ms): n={} p50={} p99={} max={}",
            late.len(),
            percentile(&mut late, 50),
            percentile(&mut late, 99),
            percentile(&mut late, 100)
        );
    }
    if args.retry_percent > 0 {
        let mut late = r.retry_lateness_ms.clone();
        println!(
            "retries asked by the handler: {} ({} tasks; {}-{} ms, write accepted {})",
            r.retries_asked,
            r.retried_tasks.len(),
            crate::worker::RETRY_DELAY_MS.start(),
            crate::worker::RETRY_DELAY_MS.end(),
            r.retries_accepted
        );
        println!("retried tasks seen waiting in the cold tier (hot to cold, sampled): {}", r.demoted_seen);
        println!("retried tasks started again before the retry was due: {}", r.early_retries);
        println!(
            "retried tasks, next start after the retry was due (ms): n={} p50={} p99={} max={}",
            late.len(),
            percentile(&mut late, 50),
            percentile(&mut late, 99),
            percentile(&mut late, 100)
        );
    }
    if args.victims > 0 {
        println!("victims: {} ({} corrupted while waiting)", r.victims, r.victims_corrupted);
        println!("victims as expected: {}", r.victims_expected);
        println!("victims deleted at the end: {}", r.victims_deleted);
        println!("victim outcomes: {:?}", r.victim_outcomes);
    }
    if let Some(c) = &r.cron {
        crate::cron::print(c);
    }
    for note in &r.notes {
        println!("note: {note}");
    }
    for (kind, v) in &r.recovery_ms {
        let mut v = v.clone();
        println!(
            "recovery after {kind} (ms to next completion): n={} p50={} max={}",
            v.len(),
            percentile(&mut v, 50),
            percentile(&mut v, 100)
        );
    }
    let mut d = r.rerun_delay_ms.clone();
    println!(
        "re-run delay of a killed worker's tasks (ms): n={} p50={} max={}",
        d.len(),
        percentile(&mut d, 50),
        percentile(&mut d, 100)
    );
    println!("violations: {}", r.violations.len());
    for v in r.violations.iter().take(20) {
        println!("  violation: {v}");
    }
    println!("RESULT: {}", if r.violations.is_empty() { "PASS" } else { "FAIL" });
}
