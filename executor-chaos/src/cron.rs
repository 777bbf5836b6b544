//! The run's cron schedule and its check: a per-second schedule
//! that the namespace's elected leader fires while the harness kills the
//! leader, pauses workers and restarts the store. At the end every tick of
//! the run's window must have exactly one task that ran to `COMPLETED`, or
//! have passed without one for a reason the misfire policy gives.
//!
//! # The rule for a missing tick
//!
//! The schedule's misfire policy is [`Misfire::Skip`]: a leader that finds
//! several ticks due fires the latest once and skips the earlier ones. A
//! live leader that reaches its store fires each tick within milliseconds,
//! so a tick passes without a task only while no leader could fire it:
//!
//! - the leader was killed or stopped (`SIGSTOP`, or stopped inside a
//!   claim): its term runs out at most one lease after its last renewal,
//!   and another worker takes the leadership at its next housekeeping round;
//! - the store was restarting, or had just dropped every connection;
//! - the machine stalled: the controller's own leader samples went
//!   unanswered for more than [`STALL_MS`] (a frozen VM, a store or a
//!   controller starved of CPU or disk). No fault of the run's makes one; a
//!   loaded CI machine does (seen: 2.4 s fire lags and 9 leader changes in
//!   a run without faults), and a leader on the same machine could not
//!   have fired either.
//!
//! A missing tick at instant `T` is *explained* when one such fault, from
//! `from` to `to` (machine clock, which the private store shares), has
//! `from - housekeeping <= T <= to + recovery + 1 s`, where recovery is
//! lease + housekeeping (the successor's takeover), the 1 s covers clients
//! reconnecting after a restart on a loaded machine, and `- housekeeping`
//! covers a leader killed between a tick and its submit. A fault aimed at a
//! process explains ticks only if that process led the namespace when the
//! fault began, as the controller's leader samples ([`watch_leader`], every
//! 200 ms) saw it: a kill of some other worker leaves the leader firing. Any
//! other missing tick is a violation, as is a tick task not `COMPLETED`, a
//! task fired before its tick, and a fire lag p99 above one housekeeping
//! interval plus the recovery time (ticks a stall covers are left out of
//! that bound and reported apart: a tick due while nothing ran fires when
//! the machine runs again, however long it stalled).
//!
//! Fire lag is the task's `created_at` (the store's clock at submit) less
//! the tick's instant. After an outage [`Misfire::Skip`] fires the latest
//! missed tick, less than one period after it, so the lag stays small even
//! when ticks were lost; the bound catches a scheduler that sleeps through
//! ticks or fires late while leading.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use executor_core::{
    Client, Namespace, TaskId, TaskRecord, TaskState, Timestamp,
    schedule::{Misfire, Schedule},
    storage::ScheduleStore,
};

use crate::{
    check::{Report, percentile},
    ledger::{Event, Ledger, now_ms},
    server::AnyError,
};

/// The name of the run's schedule; its tasks' ids start with it and `@`.
pub const SCHEDULE: &str = "chaos_tick";

/// The task each tick submits, run by every worker's tick handler.
pub const TICK_TASK: &str = "chaos_tick";

/// The run's default expression: every second (6 fields, seconds first).
pub const EXPRESSION: &str = "* * * * * *";

/// Slack for clients reconnecting after a store restart on a loaded machine.
const SLACK_MS: u64 = 1_000;

/// How often [`watch_leader`] reads the namespace's leader.
const LEADER_SAMPLE: Duration = Duration::from_millis(200);

/// A gap between two answered leader samples longer than this (five sample
/// periods) is a stall of the store or the machine, recorded as a `stall`
/// fault from the earlier answer to the later one.
pub const STALL_MS: u64 = 1_000;

/// Whether the gap `from..=to` of the controller's samples overlaps one of
/// `store_faults` (restarts and dropped connections, `from..=to` each, plus
/// the reconnection slack): the samples go unanswered while the store
/// restarts or reconnects too, so such a gap is that fault's, not a stall
/// of the machine.
pub(crate) fn within_store_fault(gap: (u64, u64), store_faults: &[(u64, u64)]) -> bool {
    store_faults.iter().any(|&(from, to)| from <= gap.1 && gap.0 <= to.saturating_add(SLACK_MS))
}

/// Whether `id` is the id of a task of the run's schedule.
///
/// ```
/// use executor_chaos::cron::is_tick;
/// assert!(is_tick("chaos_tick@2026-12-01T10:00:00Z"));
/// assert!(!is_tick("t0000001") && !is_tick("chaos_ticker@x"));
/// ```
pub fn is_tick(id: &str) -> bool {
    id.strip_prefix(SCHEDULE).is_some_and(|rest| rest.starts_with('@'))
}

/// The run's schedule of `expression`, in UTC, misfire [`Misfire::Skip`].
///
/// # Errors
/// A bad expression.
pub fn schedule(expression: &str) -> executor_core::Result<Schedule> {
    Ok(Schedule::new(SCHEDULE, TICK_TASK, expression, "UTC")?.misfire(Misfire::Skip))
}

/// The workers' timing the rule is reckoned from.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// The lease (and leadership term), ms.
    pub lease_ms: u64,
    /// The housekeeping interval, ms.
    pub housekeeping_ms: u64,
}

impl Timing {
    /// How long the namespace may be without a leader after its leader died:
    /// its term (one lease) plus the successor's wait for its next round.
    pub fn recovery_ms(self) -> u64 {
        self.lease_ms + self.housekeeping_ms
    }

    /// The most fire lag p99 may be: one housekeeping interval plus the recovery.
    pub fn lag_bound_ms(self) -> u64 {
        self.housekeeping_ms + self.recovery_ms()
    }
}

/// One tick of the run's window and the task the store holds for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tick {
    /// The tick's instant, ms since the epoch.
    pub at_ms: u64,
    /// Its task: when it was created (store clock, ms) and its final state.
    pub task: Option<(u64, TaskState)>,
}

/// The cron figures of a run.
#[derive(Clone, Debug, Default)]
pub struct CronReport {
    /// The expression.
    pub expression: String,
    /// Ticks in the window.
    pub expected: usize,
    /// Of those, ticks with a task.
    pub fired: usize,
    /// Ticks without a task.
    pub missing: usize,
    /// Missing ticks no leader outage explains (must be 0).
    pub unexplained: usize,
    /// The longest run of consecutive missing ticks.
    pub longest_gap: usize,
    /// Tick tasks of the window not `COMPLETED` at the end (must be 0).
    pub not_completed: usize,
    /// Tick tasks after the window (fired while the run wound down; not checked).
    pub after_window: usize,
    /// Fire lag of every fired tick a stall does not cover, ms.
    pub lag_ms: Vec<u64>,
    /// Fire lag of the fired ticks a stall covers, ms: reported, not
    /// bounded (a tick due while nothing ran fires when the machine runs
    /// again, however long it stalled).
    pub stalled_lag_ms: Vec<u64>,
    /// The bound of the lag's p99, ms.
    pub lag_bound_ms: u64,
    /// Kills whose target led the namespace when it was killed.
    pub leader_kills: usize,
    /// Leader changes the controller's samples saw.
    pub leader_changes: usize,
}

/// Waits (at most 60 s) until the workers have elected a leader, then puts
/// the run's schedule; answers it and its initial cursor. Putting it only
/// once a leader exists keeps the workers' start-up out of the window.
///
/// # Errors
/// No leader in time, a bad expression, the store refused the schedule.
pub async fn start<S: ScheduleStore + Clone>(
    storage: &S,
    ns: &Namespace,
    expression: &str,
) -> Result<(Schedule, Timestamp), AnyError> {
    let schedule = schedule(expression)?;
    let give_up = tokio::time::Instant::now() + Duration::from_secs(60);
    while !matches!(storage.leader(ns).await, Ok(Some(_))) {
        if tokio::time::Instant::now() >= give_up {
            return Err("no worker became leader within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Client::without_name_check(storage.clone(), ns.clone()).schedules().put(schedule.clone()).await?;
    let cursor = cursor(storage, ns).await?.ok_or("the schedule just put is not listed")?;
    Ok((schedule, cursor))
}

async fn cursor<S: ScheduleStore>(storage: &S, ns: &Namespace) -> executor_core::Result<Option<Timestamp>> {
    Ok(storage.schedules(ns).await?.into_iter().find(|e| e.schedule.name == SCHEDULE).map(|e| e.cursor))
}

/// Samples the namespace's leader every 200 ms while `on`: keeps the
/// current one's worker id in `current` (for the injector's leader kills)
/// and writes each change to `ledger` as a `leader` event (note: the worker
/// id, empty for none), which the rule reads. A failed read keeps the last.
///
/// Answers further apart than [`STALL_MS`] are written as a `stall` event
/// at the earlier answer and a `stall_end` at the later one: while neither
/// this process nor the store ran, no worker could renew a lease or fire a
/// tick either, and the checks count the window like a store fault.
pub async fn watch_leader<S: ScheduleStore>(
    storage: S,
    ns: Namespace,
    on: Arc<AtomicBool>,
    current: Arc<Mutex<Option<String>>>,
    ledger: Ledger,
) {
    let mut last: Option<Option<String>> = None;
    let mut answered = now_ms();
    while on.load(Ordering::Relaxed) {
        if let Ok(leader) = storage.leader(&ns).await {
            let t = now_ms();
            let gap = t.saturating_sub(answered);
            if gap > STALL_MS {
                let note = format!("no leader sample answered for {gap} ms");
                for (kind, at) in [("stall", answered), ("stall_end", t)] {
                    ledger.record(&Event::Fault {
                        kind: kind.to_owned(),
                        pid: None,
                        t: at,
                        note: note.clone(),
                    });
                }
            }
            answered = t;
            let worker = leader.map(|l| l.worker.to_string());
            if last.as_ref() != Some(&worker) {
                ledger.record(&Event::Fault {
                    kind: "leader".to_owned(),
                    pid: None,
                    t: now_ms(),
                    note: worker.clone().unwrap_or_default(),
                });
                *current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = worker.clone();
                last = Some(worker);
            }
        }
        tokio::time::sleep(LEADER_SAMPLE).await;
    }
}

/// Before the workers stop: waits until the leader's cursor has passed
/// `end` (at most recovery + 5 s: the last fault's outage may still last)
/// and every tick task up to `end` is terminal (at most lease + recovery +
/// 5 s more: a task of a killed worker waits for its lease to run out).
/// Answers the window's last tick: the latest at or before `end`.
pub async fn settle<S: ScheduleStore>(
    storage: &S,
    ns: &Namespace,
    schedule: &Schedule,
    first: Timestamp,
    end: Timestamp,
    timing: Timing,
) -> Timestamp {
    let Ok(cron) = schedule.parsed() else { return end };
    let last = cron.latest_at(end).unwrap_or(end);
    let patience = Duration::from_millis(timing.recovery_ms()) + Duration::from_secs(5);
    let give_up = tokio::time::Instant::now() + patience;
    while tokio::time::Instant::now() < give_up && !cursor(storage, ns).await.is_ok_and(|c| c >= Some(last)) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut waiting: Vec<TaskId> = cron
        .ticks_between(first, last, 1_000_000)
        .into_iter()
        .filter_map(|t| schedule.tick_id(t).ok())
        .collect();
    let give_up = tokio::time::Instant::now() + patience + Duration::from_millis(timing.lease_ms);
    while !waiting.is_empty() && tokio::time::Instant::now() < give_up {
        let mut still = Vec::new();
        for id in waiting {
            // Absent: a missed tick (the cursor has passed it); unreadable: asked again.
            match storage.get(ns, &id).await {
                Ok(Some(r)) if !r.state.is_terminal() => still.push(id),
                Ok(_) => {}
                Err(_) => still.push(id),
            }
        }
        waiting = still;
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    last
}

/// The ticks of `schedule` in `(first, last]` with the task each has among
/// `records` (the tick tasks found at the end); also the number of tick
/// tasks after `last`, and the ids of any task that matches no tick at all
/// (before the window or off the expression: a violation).
pub fn window(
    schedule: &Schedule,
    first: Timestamp,
    last: Timestamp,
    records: &[TaskRecord],
) -> (Vec<Tick>, usize, Vec<String>) {
    let Ok(cron) = schedule.parsed() else { return (Vec::new(), 0, Vec::new()) };
    let by_id: HashMap<&str, &TaskRecord> = records.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut known: HashSet<&str> = HashSet::new();
    let mut ticks = Vec::new();
    for t in cron.ticks_between(first, last, 1_000_000) {
        let Ok(id) = schedule.tick_id(t) else { continue };
        let task = by_id.get(id.as_str()).map(|r| (r.created_at.as_millis(), r.state));
        if let Some(r) = by_id.get(id.as_str()) {
            known.insert(r.id.as_str());
        }
        ticks.push(Tick { at_ms: t.as_millis(), task });
    }
    // Tasks after the window: every tick up to the newest task's creation.
    let newest = records.iter().map(|r| r.created_at).max().unwrap_or(last);
    let after: HashSet<String> = cron
        .ticks_between(last, newest, 1_000_000)
        .into_iter()
        .filter_map(|t| schedule.tick_id(t).ok().map(|id| id.as_str().to_owned()))
        .collect();
    let after_window = records.iter().filter(|r| after.contains(r.id.as_str())).count();
    let stray = records
        .iter()
        .map(|r| r.id.as_str())
        .filter(|id| !known.contains(id) && !after.contains(*id))
        .map(str::to_owned)
        .collect();
    (ticks, after_window, stray)
}

/// A fault that may keep every leader from firing, on the machine's clock.
#[derive(Clone, Copy, Debug)]
struct Outage {
    /// The process it hit (`None`: the store).
    pid: Option<u32>,
    from: u64,
    to: u64,
    /// A stall of the store or the machine ([`STALL_MS`]), not a fault.
    stall: bool,
}

/// Checks the window's ticks against the rule of this module's docs, from
/// the run's ledger `events` (faults, leader samples, workers' `Up`);
/// fills `c` and adds violations to `r`.
pub fn check_ticks(r: &mut Report, c: &mut CronReport, ticks: &[Tick], events: &[Event], timing: Timing) {
    let (outages, leader_kills, leader_changes) = outages(events);
    c.expected = ticks.len();
    c.lag_bound_ms = timing.lag_bound_ms();
    c.leader_kills = leader_kills;
    c.leader_changes = leader_changes;
    let covers = |o: &Outage, t: u64| {
        o.from.saturating_sub(timing.housekeeping_ms) <= t
            && t <= o.to.saturating_add(timing.recovery_ms() + SLACK_MS)
    };
    let mut gap = 0;
    for tick in ticks {
        match tick.task {
            Some((created, state)) => {
                gap = 0;
                c.fired += 1;
                if created < tick.at_ms {
                    r.violations.push(format!(
                        "cron tick {}: task created {} ms early",
                        tick.at_ms,
                        tick.at_ms - created
                    ));
                }
                let lag = created.saturating_sub(tick.at_ms);
                if outages.iter().any(|o| o.stall && covers(o, tick.at_ms)) {
                    c.stalled_lag_ms.push(lag);
                } else {
                    c.lag_ms.push(lag);
                }
                if state != TaskState::Completed {
                    c.not_completed += 1;
                    r.violations
                        .push(format!("cron tick {}: its task ended {state}, not COMPLETED", tick.at_ms));
                }
            }
            None => {
                gap += 1;
                c.missing += 1;
                c.longest_gap = c.longest_gap.max(gap);
                let t = tick.at_ms;
                let explained = outages.iter().any(|o| covers(o, t));
                if !explained {
                    c.unexplained += 1;
                    r.violations.push(format!(
                        "cron tick {t}: no task, and no leader outage (kill or stop of the leader, store restart or \
                         drop, machine stall) within {} ms before or {} ms after it",
                        timing.housekeeping_ms,
                        timing.recovery_ms() + SLACK_MS
                    ));
                }
            }
        }
    }
    let mut lag = c.lag_ms.clone();
    let p99 = percentile(&mut lag, 99);
    if p99 > c.lag_bound_ms {
        r.violations.push(format!("cron fire lag p99 {p99} ms is above the bound of {} ms", c.lag_bound_ms));
    }
}

/// The outages of a run: store faults, and faults aimed at a process that
/// led the namespace when they began; also the number of leader kills and
/// of leader changes the samples saw.
fn outages(events: &[Event]) -> (Vec<Outage>, usize, usize) {
    let mut pids: HashMap<&str, u32> = HashMap::new();
    let mut samples: Vec<(u64, &str)> = Vec::new();
    let mut faults: Vec<Outage> = Vec::new();
    // Open windows by (what they stop, the process): "process" for a
    // stopped worker, "store" for a restart, "stall" for a machine stall.
    let mut open: HashMap<(&str, Option<u32>), u64> = HashMap::new();
    let mut faulted: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Fault { .. })).collect();
    faulted.sort_by_key(|e| if let Event::Fault { t, .. } = e { *t } else { 0 });
    for e in events {
        if let Event::Up { pid, worker, .. } = e {
            pids.insert(worker, *pid);
        }
    }
    for e in faulted {
        let Event::Fault { kind, pid, t, note } = e else { continue };
        let (group, closes) = match kind.as_str() {
            "leader" => {
                samples.push((*t, note));
                continue;
            }
            "kill" => {
                faults.push(Outage { pid: *pid, from: *t, to: *t, stall: false });
                continue;
            }
            "drop" => {
                faults.push(Outage { pid: None, from: *t, to: *t, stall: false });
                continue;
            }
            "stop" | "claim_stop" => ("process", false),
            "cont" | "claim_cont" => ("process", true),
            "store_down" => ("store", false),
            "store_up" => ("store", true),
            "stall" => ("stall", false),
            "stall_end" => ("stall", true),
            _ => continue,
        };
        let key = (group, if group == "process" { *pid } else { None });
        if closes {
            let from = open.remove(&key).unwrap_or(*t);
            faults.push(Outage { pid: key.1, from, to: *t, stall: group == "stall" });
        } else {
            open.insert(key, *t);
        }
    }
    for ((group, pid), from) in open {
        faults.push(Outage { pid, from, to: u64::MAX, stall: group == "stall" });
    }
    // A gap during a store fault is that fault's: its ticks keep the lag bound.
    let store_faults: Vec<(u64, u64)> =
        faults.iter().filter(|o| !o.stall && o.pid.is_none()).map(|o| (o.from, o.to)).collect();
    for o in faults.iter_mut().filter(|o| o.stall) {
        o.stall = !within_store_fault((o.from, o.to), &store_faults);
    }
    // The leaders seen when a fault began: the sample before it, and any in
    // the sampling interval's slack before it (a change just before the fault).
    let led = |pid: u32, at: u64| {
        let before = samples.partition_point(|(t, _)| *t <= at);
        let recent = samples[..before].iter().rev().take_while(|(t, _)| *t + SLACK_MS >= at);
        samples[..before].last().into_iter().chain(recent).any(|(_, w)| pids.get(w) == Some(&pid))
    };
    let leader_kills = events
        .iter()
        .filter(|e| matches!(e, Event::Fault { kind, pid: Some(p), t, .. } if kind == "kill" && led(*p, *t)))
        .count();
    let outages = faults.into_iter().filter(|o| o.pid.is_none_or(|p| led(p, o.from))).collect();
    let changes = samples.iter().filter(|(_, w)| !w.is_empty()).count().saturating_sub(1);
    (outages, leader_kills, changes)
}

/// Prints the cron lines of the summary.
pub fn print(c: &CronReport) {
    let mut lag = c.lag_ms.clone();
    println!("cron schedule: {SCHEDULE} `{}` UTC, misfire skip", c.expression);
    println!("cron ticks expected: {}", c.expected);
    println!("cron ticks fired: {}", c.fired);
    println!("cron ticks missing: {} (longest run {})", c.missing, c.longest_gap);
    println!("cron ticks missing unexplained: {}", c.unexplained);
    println!("cron tick tasks not completed: {}", c.not_completed);
    println!("cron tick tasks after the window: {}", c.after_window);
    println!("cron leader kills: {} (leader changes seen: {})", c.leader_kills, c.leader_changes);
    println!(
        "cron fire lag (ms): n={} p50={} p99={} max={}",
        lag.len(),
        percentile(&mut lag, 50),
        percentile(&mut lag, 99),
        percentile(&mut lag, 100)
    );
    println!("cron fire lag p99 (ms): {} (bound {})", percentile(&mut lag, 99), c.lag_bound_ms);
    if !c.stalled_lag_ms.is_empty() {
        let mut stalled = c.stalled_lag_ms.clone();
        println!(
            "cron fire lag of ticks in a stall (ms, not bounded): n={} max={}",
            stalled.len(),
            percentile(&mut stalled, 100)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMING: Timing = Timing { lease_ms: 2_000, housekeeping_ms: 500 };

    fn fault(kind: &str, pid: Option<u32>, t: u64, note: &str) -> Event {
        Event::Fault { kind: kind.to_owned(), pid, t, note: note.to_owned() }
    }

    /// Ticks every second from 10 s to 30 s, fired 20 ms late, but `missing`.
    fn ticks(missing: &[u64]) -> Vec<Tick> {
        (10..=30)
            .map(|s| s * 1_000)
            .map(|at| Tick {
                at_ms: at,
                task: (!missing.contains(&at)).then_some((at + 20, TaskState::Completed)),
            })
            .collect()
    }

    fn events(killed: u32) -> Vec<Event> {
        vec![
            Event::Up { pid: 1, worker: "w-1".to_owned(), t: 0 },
            Event::Up { pid: 2, worker: "w-2".to_owned(), t: 0 },
            fault("leader", None, 100, "w-1"),
            fault("kill", Some(killed), 15_200, "SIGKILL"),
            fault("leader", None, 17_300, "w-2"),
        ]
    }

    #[test]
    fn ticks_missed_while_the_killed_leader_held_its_term_are_explained() {
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &ticks(&[16_000, 17_000]), &events(1), TIMING);
        assert_eq!((c.expected, c.fired, c.missing, c.longest_gap), (21, 19, 2, 2));
        assert_eq!((c.unexplained, c.leader_kills, c.leader_changes), (0, 1, 1));
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }

    #[test]
    fn a_kill_of_another_worker_explains_nothing() {
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &ticks(&[16_000]), &events(2), TIMING);
        assert_eq!((c.unexplained, c.leader_kills), (1, 0));
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
    }

    #[test]
    fn a_tick_missed_long_after_the_outage_is_a_violation() {
        let (mut r, mut c) = (Report::default(), CronReport::default());
        // Recovery ends by 15.2 + 2.5 + 1 s: 19 s is within, 25 s is not.
        check_ticks(&mut r, &mut c, &ticks(&[18_000, 25_000]), &events(1), TIMING);
        assert_eq!((c.missing, c.unexplained), (2, 1), "{:?}", r.violations);
    }

    #[test]
    fn store_restarts_explain_ticks_whoever_led() {
        let mut ev = events(2);
        ev.push(fault("store_down", None, 20_100, "redis SIGKILL"));
        ev.push(fault("store_up", None, 21_100, "redis SIGKILL"));
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &ticks(&[21_000, 22_000, 23_000]), &ev, TIMING);
        assert_eq!(c.unexplained, 0, "{:?}", r.violations);
    }

    #[test]
    fn a_stall_seen_by_the_controller_explains_the_ticks_it_covers() {
        let mut ev = events(2);
        ev.push(fault("stall", None, 20_400, "no leader sample answered for 2400 ms"));
        ev.push(fault("stall_end", None, 22_800, "no leader sample answered for 2400 ms"));
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &ticks(&[21_000, 22_000, 24_000]), &ev, TIMING);
        assert_eq!(c.unexplained, 0, "{:?}", r.violations);
        // Long after it (past recovery and slack), a missed tick is a violation.
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &ticks(&[21_000, 28_000]), &ev, TIMING);
        assert_eq!(c.unexplained, 1, "{:?}", r.violations);
        assert!(r.violations[0].starts_with("cron tick 28000:"), "{:?}", r.violations);

        // A gap of the samples during a store restart is the restart's: its
        // ticks keep the lag bound.
        let mut restarted = ev.clone();
        restarted.push(fault("store_down", None, 20_000, "redis SIGKILL"));
        restarted.push(fault("store_up", None, 22_500, "redis SIGKILL"));
        let mut late = ticks(&[]);
        for tick in &mut late[10..13] {
            tick.task = Some((tick.at_ms + 3_500, TaskState::Completed));
        }
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &late, &restarted, TIMING);
        assert!(c.stalled_lag_ms.is_empty(), "{:?}", c.stalled_lag_ms);
        assert!(r.violations.iter().any(|v| v.contains("p99 3500 ms")), "{:?}", r.violations);
        // Nor after a store that never came back (its window is open-ended).
        let mut down = ev.clone();
        down.push(fault("store_down", None, 20_000, "redis SIGKILL"));
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &late, &down, TIMING);
        assert!(c.stalled_lag_ms.is_empty(), "{:?}", c.stalled_lag_ms);

        // A tick fired late because of the stall is not held to the lag bound.
        let mut t = ticks(&[]);
        t[11].task = Some((t[11].at_ms + 4_000, TaskState::Completed));
        t[12].task = Some((t[12].at_ms + 3_500, TaskState::Completed));
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &t, &ev, TIMING);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        // Ticks 20 to 26 s: from one housekeeping before the stall to recovery and slack after it.
        assert_eq!((c.stalled_lag_ms.len(), c.lag_ms.len()), (7, 14));
    }

    #[test]
    fn late_fires_and_unfinished_tick_tasks_are_violations() {
        let mut t = ticks(&[]);
        for tick in t.iter_mut().take(3) {
            tick.task = Some((tick.at_ms + 4_000, TaskState::Completed));
        }
        t[5].task = Some((t[5].at_ms, TaskState::Pending));
        let (mut r, mut c) = (Report::default(), CronReport::default());
        check_ticks(&mut r, &mut c, &t, &events(1), TIMING);
        assert_eq!(c.not_completed, 1);
        assert_eq!(r.violations.len(), 2, "{:?}", r.violations);
        assert!(r.violations.iter().any(|v| v.contains("p99 4000 ms")));
    }

    #[test]
    fn window_pairs_ticks_with_their_tasks() -> executor_core::Result<()> {
        let s = schedule(EXPRESSION)?;
        let first = Timestamp::from_millis(1_000_500);
        let record = |sec: u64| {
            let at = Timestamp::from_millis(sec * 1_000);
            let created = Timestamp::from_millis(sec * 1_000 + 7);
            Ok::<_, executor_core::Error>(TaskRecord::new(
                s.tick_id(at)?,
                TICK_TASK,
                TaskState::Completed,
                b"null".to_vec(),
                created,
                created,
            ))
        };
        let records = vec![record(1_001)?, record(1_003)?, record(1_006)?, record(900)?];
        let (ticks, after, stray) = window(&s, first, Timestamp::from_millis(1_004_000), &records);
        let fired: Vec<bool> = ticks.iter().map(|t| t.task.is_some()).collect();
        assert_eq!(fired, [true, false, true, false]);
        assert_eq!(ticks[0].task, Some((1_001_007, TaskState::Completed)));
        assert_eq!((after, stray.len()), (1, 1));
        Ok(())
    }
}
