//! The invariants, checked from the ledgers and the store's final records.

use std::collections::{BTreeMap, HashMap};

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
    /// Milliseconds from each fault to the next completed task, by fault kind.
    pub recovery_ms: BTreeMap<String, Vec<u64>>,
    /// Milliseconds from a kill to the re-start of each task the killed worker held.
    pub rerun_delay_ms: Vec<u64>,
    /// Faults by kind.
    pub faults: BTreeMap<String, usize>,
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
    let mut store_down: Option<u64> = None;
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
            Event::Fault { kind, pid, t, .. } => {
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
                    "store_up" => {
                        let from = store_down.take().unwrap_or(*t);
                        windows.push(Window { kind: "store restart", pid: None, from, to: *t });
                        faults.push(("restart".to_owned(), *t));
                    }
                    "drop" => {
                        windows.push(Window { kind: "dropped connection", pid: None, from: *t, to: *t + 1 });
                        faults.push((kind.clone(), *t));
                    }
                    "term" => end_of_run = end_of_run.min(*t),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for (p, from) in open_stop {
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
                if !matches!(f.state.as_str(), "COMPLETED" | "FAILED" | "TIMEOUT" | "ERROR" | "CANCELLED") {
                    r.lost += 1;
                    r.violations.push(format!("task {id}: still {} at the end", f.state));
                }
            }
        }
    }
    if finals.len() != submitted.len() {
        r.violations.push(format!("store holds {} tasks, {} were submitted", finals.len(), submitted.len()));
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
                let paused = windows
                    .iter()
                    .any(|w| w.kind == "stop" && w.pid == Some(b.pid) && w.to >= a.start && w.to <= b.start);
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
            let cause = if killed.is_some() {
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

/// The p-th percentile (0-100) of `v` (sorted in place); 0 when empty.
pub fn percentile(v: &mut [u64], p: u32) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let i = (v.len() - 1) * p as usize / 100;
    v[i]
}
