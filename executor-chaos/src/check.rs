//! The invariants, checked from the ledgers and the store's final records.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ledger::Event;

/// What the store holds for one task at the end.
#[derive(Clone, Debug)]
pub struct Final {
    /// Its state, as text (`COMPLETED`, ...).
    pub state: String,
    /// Its fence.
    pub fence: u64,
    /// The tier it was found in (`store` for a single store; the first
    /// listed, `hot`, if it is in both).
    pub tier: &'static str,
    /// How many tiers hold it (1 unless a move between tiers was left half done).
    pub copies: usize,
}

/// Everything the checker measured. `violations` empty means every invariant held.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Tasks submitted.
    pub tasks: usize,
    /// Attempts started by handlers.
    pub attempts: usize,
    /// Attempts beyond the first, per task, summed.
    pub reruns: usize,
    /// Re-runs by cause.
    pub rerun_causes: BTreeMap<&'static str, usize>,
    /// Finish writes refused with a stale fence.
    pub refused_stale: usize,
    /// Leases a heartbeat reported lost.
    pub lost_leases: usize,
    /// Handler futures dropped before returning.
    pub aborted: usize,
    /// Claims whose handler never started (claimed by a process that died
    /// at once, or whose claim reply was lost).
    pub orphan_claims: usize,
    /// Finish writes that failed with a store error (outage).
    pub finish_errors: usize,
    /// Submitted tasks not terminal (or missing) at the end.
    pub lost: usize,
    /// Attempts started after a newer fence of their task had started: the
    /// worker was paused between its claim and the handler's start.
    pub stale_starts: usize,
    /// Attempts of one task that overlapped in time without a stopped process.
    pub overlapping: usize,
    /// Overlaps explained by a SIGSTOPped process whose write was refused.
    pub paused_overlaps: usize,
    /// Stale writes accepted (must be 0).
    pub accepted_stale: usize,
    /// Tasks by final state.
    pub states: BTreeMap<String, usize>,
    /// Tasks by the tier that holds them at the end.
    pub final_tiers: BTreeMap<&'static str, usize>,
    /// Most tasks waiting (`CREATED`/`PENDING`) in each tier at once, sampled.
    pub waiting_peak: BTreeMap<&'static str, u64>,
    /// Tasks submitted with a delay (past a tiered store's horizon).
    pub delayed: usize,
    /// Delayed tasks whose first attempt started before they were due (must be 0).
    pub early_starts: usize,
    /// Delayed tasks: ms from the earliest they could be due to their first start.
    pub start_lateness_ms: Vec<u64>,
    /// Attempts whose handler asked for a retry after a delay (`--retry-percent`).
    pub retries_asked: usize,
    /// Of those, the ones whose `PENDING` write was accepted.
    pub retries_accepted: usize,
    /// Tasks whose handler asked for a retry.
    pub retried_tasks: HashSet<String>,
    /// Re-runs of an accepted retry that started before its delay elapsed (must be 0).
    pub early_retries: usize,
    /// Accepted retries: ms from the earliest the retry could be due to the next start.
    pub retry_lateness_ms: Vec<u64>,
    /// Tasks seen (sampled) waiting in the cold tier after an attempt: demoted retries.
    pub demoted_seen: usize,
    /// Milliseconds from each fault to the next completed task, by fault kind.
    pub recovery_ms: BTreeMap<String, Vec<u64>>,
    /// Milliseconds from a kill to the re-start of each task the killed worker held.
    pub rerun_delay_ms: Vec<u64>,
    /// Faults by kind.
    pub faults: BTreeMap<String, usize>,
    /// Stalls of the store or the machine, ms each: gaps of more than
    /// [`crate::cron::STALL_MS`] between the controller's answered leader
    /// samples that no store restart or dropped connection explains. No
    /// fault makes them; a loaded machine does. Every gap explains the
    /// re-runs it overlaps like a store restart.
    pub stalls_ms: Vec<u64>,
    /// Tasks (ordinary or victims) still `RUNNING` at the end (must be 0).
    pub stuck_running: usize,
    /// Re-runs of a task whose earlier attempt returned on a worker that was
    /// neither killed nor paused, with no store fault to explain them (must
    /// be 0: a healthy task re-run, e.g. because of another task's bad input).
    pub healthy_reruns: usize,
    /// Victims submitted.
    pub victims: usize,
    /// Of those, corrupt ones whose record was edited while they waited.
    pub victims_corrupted: usize,
    /// Victims that ended as expected.
    pub victims_expected: usize,
    /// Victims by label and outcome (`corrupt wrong-type -> ERROR`).
    pub victim_outcomes: BTreeMap<String, usize>,
    /// Victims `Storage::delete` removed at the end.
    pub victims_deleted: usize,
    /// The cron schedule's figures ([`crate::cron`]), when the run had one.
    pub cron: Option<crate::cron::CronReport>,
    /// Observations that are not violations.
    pub notes: Vec<String>,
    /// Broken invariants, described (the first few are printed).
    pub violations: Vec<String>,
}

#[derive(Debug, Default)]
struct Attempt {
    pid: u32,
    start: u64,
    end: Option<u64>,
    returned: bool,
    accepted: Vec<String>,
    results: usize,
    claims: usize,
    /// The delay the handler asked to be retried after, ms.
    retry_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    kind: &'static str,
    pid: Option<u32>,
    from: u64,
    to: u64,
}

/// Checks every invariant. `lease_ms` bounds how far before a store fault an
/// attempt may have started and still be hurt by it.
pub fn check(
    events: &[Event],
    submitted: &[String],
    finals: &HashMap<String, Final>,
    lease_ms: u64,
) -> Report {
    let mut r = Report { tasks: submitted.len(), ..Report::default() };
    let mut tasks: HashMap<&str, BTreeMap<u64, Attempt>> = HashMap::new();
    let mut windows: Vec<Window> = Vec::new();
    let mut kills: Vec<(u32, u64)> = Vec::new();
    let mut faults: Vec<(String, u64)> = Vec::new();
    let mut completions: Vec<u64> = Vec::new();
    let mut open_stop: HashMap<u32, u64> = HashMap::new();
    let mut open_claim_stop: HashMap<u32, u64> = HashMap::new();
    let mut store_down: Option<u64> = None;
    let mut stall: Option<u64> = None;
    let mut end_of_run = u64::MAX;
    for e in events {
        match e {
            Event::Claim { task, fence, .. } => {
                tasks.entry(task).or_default().entry(*fence).or_default().claims += 1;
            }
            Event::Start { task, fence, pid, t, .. } => {
                let a = tasks.entry(task).or_default().entry(*fence).or_default();
                if a.start != 0 {
                    r.violations.push(format!("task {task}: fence {fence} started twice (double claim)"));
                }
                a.pid = *pid;
                a.start = *t;
            }
            Event::Retry { task, fence, delay_ms, .. } => {
                r.retries_asked += 1;
                r.retried_tasks.insert(task.clone());
                tasks.entry(task).or_default().entry(*fence).or_default().retry_ms = Some(*delay_ms);
            }
            Event::End { task, fence, t, .. } | Event::Abort { task, fence, t, .. } => {
                let a = tasks.entry(task).or_default().entry(*fence).or_default();
                a.end = Some(*t);
                if matches!(e, Event::Abort { .. }) {
                    r.aborted += 1;
                } else {
                    a.returned = true;
                }
            }
            Event::Finish { task, fence, t, result, .. } => {
                let a = tasks.entry(task).or_default().entry(*fence).or_default();
                a.results += 1;
                if result == "stale" {
                    r.refused_stale += 1;
                } else if let Some(state) = result.strip_prefix("ok:") {
                    a.accepted.push(state.to_owned());
                    if state == "COMPLETED" {
                        completions.push(*t);
                    }
                } else {
                    r.finish_errors += 1;
                }
            }
            Event::Lost { tasks: lost, .. } => r.lost_leases += lost.len(),
            Event::Fault { kind, pid, t, note } => {
                *r.faults.entry(kind.clone()).or_default() += 1;
                match kind.as_str() {
                    "kill" => {
                        kills.push((pid.unwrap_or(0), *t));
                        faults.push((kind.clone(), *t));
                    }
                    "stop" => {
                        open_stop.insert(pid.unwrap_or(0), *t);
                        faults.push((kind.clone(), *t));
                    }
                    "cont" => {
                        let p = pid.unwrap_or(0);
                        let from = open_stop.remove(&p).unwrap_or(*t);
                        windows.push(Window { kind: "stop", pid: Some(p), from, to: *t });
                    }
                    "store_down" => store_down = Some(*t),
                    "stall" => stall = Some(*t),
                    "stall_end" => {
                        let from = stall.take().unwrap_or(*t);
                        windows.push(Window { kind: "store or machine stall", pid: None, from, to: *t });
                    }
                    "store_up" => {
                        let from = store_down.take().unwrap_or(*t);
                        windows.push(Window { kind: "store restart", pid: None, from, to: *t });
                        faults.push(("restart".to_owned(), *t));
                    }
                    "drop" => {
                        windows.push(Window { kind: "dropped connection", pid: None, from: *t, to: *t + 1 });
                        faults.push((kind.clone(), *t));
                    }
                    // Written by the paused worker itself (`ClaimStop`).
                    "claim_stop" => {
                        open_claim_stop.insert(pid.unwrap_or(0), *t);
                        faults.push(("claim stop".to_owned(), *t));
                    }
                    "claim_cont" => {
                        let p = pid.unwrap_or(0);
                        let from = open_claim_stop.remove(&p).unwrap_or(*t);
                        windows.push(Window { kind: "stop", pid: Some(p), from, to: *t });
                    }
                    "first_start_failed" => r.violations.push(format!("concurrent first start: {note}")),
                    "term" => end_of_run = end_of_run.min(*t),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    // The stalls no store fault explains.
    let store_faults: Vec<(u64, u64)> = windows
        .iter()
        .filter(|w| matches!(w.kind, "store restart" | "dropped connection"))
        .map(|w| (w.from, w.to))
        .collect();
    r.stalls_ms = windows
        .iter()
        .filter(|w| w.kind == "store or machine stall")
        .filter(|w| !crate::cron::within_store_fault((w.from, w.to), &store_faults))
        .map(|w| w.to.saturating_sub(w.from))
        .collect();
    for (p, from) in open_stop.into_iter().chain(open_claim_stop) {
        windows.push(Window { kind: "stop", pid: Some(p), from, to: u64::MAX });
    }
    completions.sort_unstable();

    for (kind, t) in &faults {
        let i = completions.partition_point(|c| c <= t);
        if let Some(c) = completions.get(i) {
            r.recovery_ms.entry(kind.clone()).or_default().push(c - t);
        }
    }

    for id in submitted {
        match finals.get(id) {
            None => {
                r.lost += 1;
                r.violations.push(format!("task {id}: missing from the store (lost)"));
            }
            Some(f) => {
                *r.states.entry(f.state.clone()).or_default() += 1;
                *r.final_tiers.entry(f.tier).or_default() += 1;
                if f.copies > 1 {
                    r.violations.push(format!(
                        "task {id}: held by {} tiers at the end ({} copy {})",
                        f.copies, f.tier, f.state
                    ));
                }
                if f.tier == "unlisted" {
                    r.violations
                        .push(format!("task {id}: listed under no state, but get finds it {}", f.state));
                }
                if f.state == "RUNNING" {
                    r.stuck_running += 1;
                }
                if !matches!(f.state.as_str(), "COMPLETED" | "FAILED" | "TIMEOUT" | "ERROR" | "CANCELLED") {
                    r.lost += 1;
                    r.violations.push(format!("task {id}: still {} at the end", f.state));
                }
            }
        }
    }
    // The cron schedule's tasks are checked by `crate::cron`; `finals` holds
    // them so their final fence is checked below like any task's.
    let ordinary = finals.keys().filter(|id| !crate::cron::is_tick(id)).count();
    if ordinary != submitted.len() {
        r.violations.push(format!("store holds {ordinary} tasks, {} were submitted", submitted.len()));
    }

    for (id, by_fence) in &tasks {
        let mut started: Vec<(u64, &Attempt)> =
            by_fence.iter().filter(|(_, a)| a.start != 0).map(|(f, a)| (*f, a)).collect();
        r.orphan_claims += by_fence.values().filter(|a| a.start == 0 && a.claims > 0).count();
        r.attempts += started.len();
        r.reruns += started.len().saturating_sub(1);
        started.sort_by_key(|(f, a)| (a.start, *f));
        for pair in started.windows(2) {
            let ((fa, a), (fb, b)) = (pair[0], pair[1]);
            if fb <= fa {
                // A worker paused between receiving its claim and starting the
                // handler starts a lease that expired meanwhile (executor-core
                // computes the lease's local expiry from the attempt's start,
                // not from the claim). Counted apart; it is a violation only if
                // it ran at the same time as the newer attempt or its write was
                // accepted.
                let paused = windows.iter().any(|w| {
                    w.kind == "stop"
                        && w.pid == Some(b.pid)
                        && w.to >= a.start
                        && w.to <= b.start + RESUME_SLACK_MS
                });
                let overlaps = a.end.is_none_or(|end| end > b.start);
                if paused && !overlaps && b.accepted.is_empty() {
                    r.stale_starts += 1;
                    *r.rerun_causes.entry("stale start after stop").or_default() += 1;
                    continue;
                }
                r.violations.push(format!(
                    "task {id}: fence {fb} (pid {}) started at {} after fence {fa} (pid {}) started at {}{}",
                    b.pid,
                    b.start,
                    a.pid,
                    a.start,
                    if paused { " and ran at the same time" } else { "" }
                ));
            }
            let killed =
                kills.iter().find(|(p, t)| *p == a.pid && *t >= a.start && *t <= b.start).map(|k| k.1);
            let stopped = windows.iter().any(|w| {
                w.kind == "stop"
                    && w.pid == Some(a.pid)
                    && w.from <= b.start
                    // A claim in flight during the pause is delivered after it.
                    && w.to.saturating_add(lease_ms) >= a.start
            });
            let end = a.end.or(killed);
            match end {
                Some(end) if end > b.start => {
                    if stopped && a.accepted.is_empty() {
                        r.paused_overlaps += 1;
                    } else if stopped {
                        r.accepted_stale += 1;
                        r.violations.push(format!(
                            "task {id}: paused attempt fence {fa} overlapped fence {fb} and its write was accepted"
                        ));
                    } else {
                        r.overlapping += 1;
                        r.violations.push(format!(
                            "task {id}: attempt fence {fa} (pid {}, {}..{end}) overlaps fence {fb} (pid {}, from {})",
                            a.pid, a.start, b.pid, b.start
                        ));
                    }
                }
                Some(_) => {}
                None => r.violations.push(format!(
                    "task {id}: attempt fence {fa} (pid {}) has no end and its process was not killed",
                    a.pid
                )),
            }
            // A retry the handler asked for and the store accepted: the next
            // attempt is due no earlier than the handler's return plus the delay
            // (the store reads its clock during the write, after the return).
            let retried = a.retry_ms.filter(|_| a.accepted.iter().any(|s| s == "PENDING"));
            let cause = if let Some(delay) = retried {
                let due = a.end.unwrap_or(a.start) + delay;
                if b.start + DUE_SLACK_MS < due {
                    r.early_retries += 1;
                    r.violations.push(format!(
                        "task {id}: fence {fb} started at {}, {} ms before the retry fence {fa} asked for was due",
                        b.start,
                        due - b.start
                    ));
                } else {
                    r.retry_lateness_ms.push(b.start.saturating_sub(due));
                }
                "retry requested by the handler"
            } else if crate::victims::is_victim(id) && a.accepted.iter().any(|s| s == "PENDING") {
                // A victim's failed attempt retried by its policy.
                "victim retry"
            } else if killed.is_some() {
                "kill"
            } else if stopped {
                "stop"
            } else if a.accepted.iter().any(|s| s == "PENDING") && b.start >= end_of_run {
                "shutdown"
            } else if let Some(w) = windows
                .iter()
                .find(|w| w.pid.is_none() && w.from <= b.start && w.to.saturating_add(lease_ms) >= a.start)
            {
                w.kind
            } else if a.returned {
                r.healthy_reruns += 1;
                r.violations.push(format!(
                    "task {id}: re-run as fence {fb} (pid {}, at {}) after fence {fa} returned on a healthy worker \
                     (pid {}, {}..{}): no kill, pause or store fault explains it",
                    b.pid,
                    b.start,
                    a.pid,
                    a.start,
                    a.end.unwrap_or(0)
                ));
                "healthy task re-run"
            } else {
                r.violations.push(format!(
                    "task {id}: re-run of fence {fa} (pid {}, started {}) as fence {fb} at {} is not explained \
                     by any fault",
                    a.pid, a.start, b.start
                ));
                "unexplained"
            };
            *r.rerun_causes.entry(cause).or_default() += 1;
            if let Some(k) = killed
                && a.end.is_none()
            {
                r.rerun_delay_ms.push(b.start.saturating_sub(k));
            }
        }
        r.retries_accepted += by_fence
            .values()
            .filter(|a| a.retry_ms.is_some() && a.accepted.iter().any(|s| s == "PENDING"))
            .count();
        let completed: Vec<u64> = by_fence
            .iter()
            .filter(|(_, a)| a.accepted.iter().any(|s| s == "COMPLETED"))
            .map(|(f, _)| *f)
            .collect();
        if completed.len() > 1 {
            r.accepted_stale += 1;
            r.violations.push(format!("task {id}: completed by fences {completed:?}"));
        }
        if let Some(f) = finals.get(*id)
            && f.state == "COMPLETED"
        {
            let ok = match completed.first() {
                Some(c) => *c == f.fence,
                // The accepting write's reply never reached the ledger (the
                // worker was killed while it was in flight, the store restarted
                // or the connection dropped): the record must name an attempt
                // whose handler ran to its end.
                None => by_fence.get(&f.fence).is_some_and(|a| a.returned),
            };
            if !ok {
                r.violations.push(format!(
                    "task {id}: final fence {} is not the attempt that completed it ({completed:?})",
                    f.fence
                ));
            }
        }
    }
    r
}

/// Checks the victims against what each must end as
/// ([`crate::victims::Victim::expected`]), given `outcomes` read from the
/// store in the same order. A victim still `RUNNING` is stuck.
pub fn check_victims(
    r: &mut Report,
    victims: &[crate::victims::Victim],
    outcomes: &[crate::victims::Outcome],
) {
    use crate::victims::Outcome;
    for (v, o) in victims.iter().zip(outcomes).filter(|(v, _)| v.submitted) {
        r.victims += 1;
        r.victims_corrupted += usize::from(v.corrupted);
        let label = v.label();
        *r.victim_outcomes.entry(format!("{label} -> {o}")).or_default() += 1;
        if matches!(o, Outcome::Record { state: executor_core::TaskState::Running, .. }) {
            r.stuck_running += 1;
        }
        if v.expected(o) {
            r.victims_expected += 1;
        } else {
            let error = match o {
                Outcome::Record { error: Some(e), .. } | Outcome::Unreadable(e) => format!(": {e}"),
                _ => String::new(),
            };
            r.violations.push(format!("victim {} ({label}): ended {o}{error}", v.id));
        }
    }
}

/// The controller stamps `cont` once `kill(SIGCONT)` has returned; the
/// resumed worker can run, and stamp its handler's start, before the
/// controller's stamp (seen: 1 ms later, on two busy cores).
const RESUME_SLACK_MS: u64 = 20;

/// Slack for three clocks (the controller's, the store's, the worker's; one
/// machine) read at millisecond granularity.
const DUE_SLACK_MS: u64 = 5;

/// Checks delayed tasks: `due_ms` holds, per delayed task, the earliest
/// moment it can be due (its submit call's start plus its delay). Its first
/// attempt must not start before then: a promotion from the cold tier keeps
/// the due time.
pub fn check_due(r: &mut Report, events: &[Event], due_ms: &HashMap<String, u64>) {
    r.delayed = due_ms.len();
    let mut first: HashMap<&str, u64> = HashMap::new();
    for e in events {
        if let Event::Start { task, t, .. } = e {
            first.entry(task.as_str()).and_modify(|f| *f = (*f).min(*t)).or_insert(*t);
        }
    }
    for (id, due) in due_ms {
        let Some(start) = first.get(id.as_str()) else { continue };
        if start + DUE_SLACK_MS < *due {
            r.early_starts += 1;
            r.violations.push(format!("task {id}: started at {start}, {} ms before it was due", due - start));
        } else {
            r.start_lateness_ms.push(start.saturating_sub(*due));
        }
    }
}

/// Checks the demotions sampled during a run (`demoted`: tasks seen waiting
/// in the cold tier after an attempt). Only a retry past the horizon moves
/// an attempted task to the cold tier, so each must have asked for one; and
/// a `tiered` run whose retries were accepted must have shown some there.
pub fn check_demoted(r: &mut Report, demoted: &HashSet<String>, tiered: bool) {
    r.demoted_seen = demoted.len();
    let mut unasked: Vec<&String> = demoted.iter().filter(|id| !r.retried_tasks.contains(*id)).collect();
    unasked.sort();
    for id in unasked {
        r.violations
            .push(format!("task {id}: waited in the cold tier after an attempt, but asked for no retry"));
    }
    if tiered && r.retries_accepted > 0 && demoted.is_empty() {
        r.violations.push(format!(
            "{} retries past the horizon were accepted, none was ever seen in the cold tier",
            r.retries_accepted
        ));
    }
}

/// The p-th percentile (0-100) of `v` (sorted in place); 0 when empty.
pub fn percentile(v: &mut [u64], p: u32) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let i = (v.len() - 1) * p as usize / 100;
    v[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One task whose first attempt (fence 1) asked for a 4 s retry at 1,000
    /// and whose second attempt (fence 2) started at `next`.
    fn retried(next: u64) -> Vec<Event> {
        let task = || "t0000001".to_owned();
        vec![
            Event::Start { task: task(), fence: 1, attempt: 1, pid: 7, t: 990 },
            Event::Retry { task: task(), fence: 1, delay_ms: 4_000, pid: 7, t: 999 },
            Event::End { task: task(), fence: 1, pid: 7, t: 1_000 },
            Event::Finish {
                task: task(),
                fence: 1,
                pid: 7,
                t: 1_002,
                target: "PENDING".to_owned(),
                result: "ok:PENDING".to_owned(),
            },
            Event::Start { task: task(), fence: 2, attempt: 2, pid: 8, t: next },
            Event::End { task: task(), fence: 2, pid: 8, t: next + 10 },
            Event::Finish {
                task: task(),
                fence: 2,
                pid: 8,
                t: next + 12,
                target: "COMPLETED".to_owned(),
                result: "ok:COMPLETED".to_owned(),
            },
        ]
    }

    fn finals() -> HashMap<String, Final> {
        let done = Final { state: "COMPLETED".to_owned(), fence: 2, tier: "hot", copies: 1 };
        HashMap::from([("t0000001".to_owned(), done)])
    }

    #[test]
    fn a_retry_asked_by_the_handler_explains_the_rerun_once_its_delay_elapsed() {
        let r = check(&retried(5_050), &["t0000001".to_owned()], &finals(), 2_000);
        assert_eq!(r.violations, Vec::<String>::new());
        assert_eq!(r.rerun_causes.get("retry requested by the handler"), Some(&1));
        assert_eq!((r.retries_asked, r.retries_accepted, r.early_retries), (1, 1, 0));
        assert_eq!(r.retry_lateness_ms, vec![50]);
    }

    #[test]
    fn a_rerun_before_the_retry_delay_elapsed_is_a_violation() {
        let r = check(&retried(3_000), &["t0000001".to_owned()], &finals(), 2_000);
        assert_eq!(r.early_retries, 1);
        assert!(r.violations.iter().any(|v| v.contains("2000 ms before the retry")), "{:?}", r.violations);
    }

    #[test]
    fn a_rerun_after_an_attempt_returned_on_a_healthy_worker_is_a_violation() {
        let task = || "t0000001".to_owned();
        let events = vec![
            Event::Start { task: task(), fence: 1, attempt: 1, pid: 7, t: 1_000 },
            Event::End { task: task(), fence: 1, pid: 7, t: 1_050 },
            Event::Start { task: task(), fence: 2, attempt: 2, pid: 8, t: 4_000 },
            Event::End { task: task(), fence: 2, pid: 8, t: 4_050 },
            Event::Finish {
                task: task(),
                fence: 2,
                pid: 8,
                t: 4_060,
                target: "COMPLETED".to_owned(),
                result: "ok:COMPLETED".to_owned(),
            },
        ];
        let r = check(&events, &["t0000001".to_owned()], &finals(), 2_000);
        assert_eq!(r.healthy_reruns, 1, "{:?}", r.violations);
        assert!(r.violations[0].contains("returned on a healthy worker"), "{:?}", r.violations);

        // The same re-run while worker 7 was paused inside a claim is allowed.
        let mut paused = events.clone();
        paused.push(Event::Fault {
            kind: "claim_stop".to_owned(),
            pid: Some(7),
            t: 1_060,
            note: String::new(),
        });
        paused.push(Event::Fault {
            kind: "claim_cont".to_owned(),
            pid: Some(7),
            t: 5_000,
            note: String::new(),
        });
        let r = check(&paused, &["t0000001".to_owned()], &finals(), 2_000);
        assert_eq!((r.healthy_reruns, r.violations.len()), (0, 0), "{:?}", r.violations);
        assert_eq!(r.rerun_causes.get("stop"), Some(&1));

        // And while the controller's leader samples went unanswered (a
        // stalled machine or store), from before its lease could run out.
        let stalled = |from: u64, to: u64| {
            let mut e = events.clone();
            for (kind, t) in [("stall", from), ("stall_end", to)] {
                e.push(Event::Fault { kind: kind.to_owned(), pid: None, t, note: String::new() });
            }
            check(&e, &["t0000001".to_owned()], &finals(), 2_000)
        };
        let r = stalled(1_500, 3_200);
        assert_eq!((r.healthy_reruns, r.violations.len()), (0, 0), "{:?}", r.violations);
        assert_eq!(r.rerun_causes.get("store or machine stall"), Some(&1));
        assert_eq!(r.stalls_ms, vec![1_700]);
        // A gap during a store restart is the restart's, not a stall.
        let mut restarted = events.clone();
        for (kind, t) in [("store_down", 1_400), ("stall", 1_500), ("stall_end", 3_200), ("store_up", 2_900)]
        {
            restarted.push(Event::Fault { kind: kind.to_owned(), pid: None, t, note: String::new() });
        }
        let r = check(&restarted, &["t0000001".to_owned()], &finals(), 2_000);
        assert_eq!((r.stalls_ms.len(), r.violations.len()), (0, 0), "{:?}", r.violations);
        // A stall after the re-run started explains nothing.
        assert_eq!(stalled(4_100, 5_500).healthy_reruns, 1);
    }

    #[test]
    fn a_start_stamped_just_before_the_controllers_resume_is_a_stale_start() {
        let task = || "t0000001".to_owned();
        let fault =
            |kind: &str, t| Event::Fault { kind: kind.to_owned(), pid: Some(7), t, note: String::new() };
        let run = |resumed_at| {
            let events = vec![
                fault("stop", 1_000),
                Event::Start { task: task(), fence: 3, attempt: 2, pid: 8, t: 3_000 },
                Event::End { task: task(), fence: 3, pid: 8, t: 3_050 },
                Event::Finish {
                    task: task(),
                    fence: 3,
                    pid: 8,
                    t: 3_060,
                    target: "COMPLETED".to_owned(),
                    result: "ok:COMPLETED".to_owned(),
                },
                // Worker 7 claimed fence 1 before it was stopped; it starts the
                // handler as soon as it runs again, and its write is refused.
                Event::Start { task: task(), fence: 1, attempt: 1, pid: 7, t: 5_000 },
                fault("cont", resumed_at),
                Event::End { task: task(), fence: 1, pid: 7, t: 5_010 },
                Event::Finish {
                    task: task(),
                    fence: 1,
                    pid: 7,
                    t: 5_020,
                    target: "COMPLETED".to_owned(),
                    result: "stale".to_owned(),
                },
            ];
            let done = Final { state: "COMPLETED".to_owned(), fence: 3, tier: "hot", copies: 1 };
            check(&events, &[task()], &HashMap::from([(task(), done)]), 2_000)
        };
        let r = run(5_001);
        assert_eq!((r.stale_starts, r.violations.len()), (1, 0), "{:?}", r.violations);
        // A resume long after the start does not explain it.
        let r = run(5_500);
        assert_eq!(r.stale_starts, 0);
        assert!(
            r.violations.iter().any(|v| v.contains("fence 1 (pid 7) started at 5000 after fence 3")),
            "{:?}",
            r.violations
        );
    }

    #[test]
    fn victims_must_end_dead_lettered_with_their_reason() {
        use crate::victims::{Outcome, VictimKind, plan};
        use executor_core::TaskState;
        let victims: Vec<_> =
            plan(crate::server::Backend::Redis, &[VictimKind::PanicStart, VictimKind::Corrupt], 1)
                .into_iter()
                .map(|mut v| {
                    v.submitted = true;
                    v.corrupted = true;
                    v
                })
                .collect();
        let panicked = Outcome::Record {
            state: TaskState::Error,
            error: Some(format!("panicked while starting: {}", crate::victims::PANIC_TEXT)),
        };
        let mut r = Report::default();
        check_victims(&mut r, &victims, &[panicked, Outcome::Unreadable("field `s`".to_owned())]);
        assert_eq!((r.victims, r.victims_expected, r.violations.len()), (2, 2, 0), "{:?}", r.violations);

        let stuck = Outcome::Record { state: TaskState::Running, error: None };
        let mut r = Report::default();
        check_victims(&mut r, &victims, &[stuck, Outcome::Record { state: TaskState::Pending, error: None }]);
        assert_eq!(
            (r.victims_expected, r.stuck_running, r.violations.len()),
            (0, 1, 2),
            "{:?}",
            r.violations
        );
    }

    #[test]
    fn a_task_demoted_without_asking_for_a_retry_is_a_violation() {
        let mut r = check(&retried(5_050), &["t0000001".to_owned()], &finals(), 2_000);
        check_demoted(&mut r, &HashSet::from(["t0000001".to_owned(), "t0000002".to_owned()]), true);
        assert_eq!(r.demoted_seen, 2);
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
        assert!(r.violations[0].starts_with("task t0000002:"));

        let mut none = check(&retried(5_050), &["t0000001".to_owned()], &finals(), 2_000);
        check_demoted(&mut none, &HashSet::new(), true);
        assert!(none.violations.iter().any(|v| v.contains("none was ever seen in the cold tier")));
    }
}
