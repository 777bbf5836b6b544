//! Metric names and the calls that record them, through the `metrics` facade.
//! Install any recorder (e.g. `metrics-exporter-prometheus`) to export them.

use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};

use crate::{Namespace, SubmitOutcome, TaskState, query::StateCounts};

/// Prefix of every metric name.
pub const PREFIX: &str = "reliable_executor_";

/// Counter: submits, by `task` and `outcome` (created, existing, debounced).
pub const SUBMITTED: &str = "reliable_executor_submitted_total";
/// Counter: attempts started, by `task`.
pub const STARTED: &str = "reliable_executor_started_total";
/// Counter: tasks completed, by `task`.
pub const COMPLETED: &str = "reliable_executor_completed_total";
/// Counter: attempts failed, by `task`.
pub const FAILED: &str = "reliable_executor_failed_total";
/// Counter: retries scheduled, by `task`.
pub const RETRIED: &str = "reliable_executor_retried_total";
/// Counter: tasks past `max_duration`, by `task`.
pub const TIMED_OUT: &str = "reliable_executor_timed_out_total";
/// Counter: tasks sent to the dead letter, by `task` and `state`.
pub const DEAD_LETTERED: &str = "reliable_executor_dead_lettered_total";
/// Counter: expired leases recovered by the leader, by `outcome`.
pub const RECOVERED: &str = "reliable_executor_recovered_total";
/// Counter: finishes refused because the lease was stale.
pub const STALE_FENCE: &str = "reliable_executor_stale_fence_total";
/// Counter: finished tasks deleted by retention.
pub const TRIMMED: &str = "reliable_executor_trimmed_total";
/// Histogram (seconds): attempt run time, by `task`.
pub const EXECUTION_SECONDS: &str = "reliable_executor_execution_seconds";
/// Histogram (seconds): due time to start, by `task`.
pub const QUEUE_WAIT_SECONDS: &str = "reliable_executor_queue_wait_seconds";
/// Gauge: attempts running in this process, by `namespace`.
pub const IN_FLIGHT: &str = "reliable_executor_in_flight";
/// Gauge: free worker slots in this process, by `namespace`.
pub const FREE_SLOTS: &str = "reliable_executor_free_slots";
/// Gauge: tasks by `namespace` and `state` (sampled by the leader; read it
/// from the process whose `reliable_executor_leader` is 1).
pub const TASKS: &str = "reliable_executor_tasks";
/// Counter: debounced submits absorbed by a `Coalescer` in process, by `task`.
pub const COALESCE_ABSORBED: &str = "reliable_executor_coalesce_absorbed_total";
/// Counter: debounced submits a `Coalescer` forwarded to the store, by `task`.
pub const COALESCE_FORWARDED: &str = "reliable_executor_coalesce_forwarded_total";
/// Counter: tasks a `TieredStorage` moved from the cold to the hot store.
pub const PROMOTED: &str = "reliable_executor_promoted_total";
/// Counter: cold tasks the hot store refused to import (damaged records), left cold.
pub const PROMOTION_REFUSED: &str = "reliable_executor_promotion_refused_total";
/// Histogram (seconds): how late a task reached the hot store, relative to
/// the moment it came within the horizon.
pub const PROMOTION_LAG_SECONDS: &str = "reliable_executor_promotion_lag_seconds";
/// Gauge: 1 while this process leads housekeeping of `namespace`.
pub const LEADER: &str = "reliable_executor_leader";
/// Counter: tasks claimed by a worker without a handler for their name (an
/// older binary in a rolling deploy), by task name and what happened
/// (`postponed` back to the queue, or `dead_lettered` after the grace).
pub const UNKNOWN_TASK: &str = "reliable_executor_unknown_task_total";
/// Gauge: distinct handler sets among the workers of a namespace, set by its
/// leader; above 1 while workers run different handlers (a rolling deploy,
/// or two services sharing a namespace by mistake).
pub const HANDLER_SETS: &str = "reliable_executor_handler_sets";
/// Counter: cron ticks that submitted a task, by schedule and outcome
/// (`created`, or `existing` when an earlier leader had submitted it).
pub const SCHEDULE_FIRED: &str = "reliable_executor_schedule_fired_total";
/// Counter: cron ticks that passed without a task, by schedule and reason
/// (`overlap`, `misfire`, `paused`, `refused` by the store for good).
pub const SCHEDULE_SKIPPED: &str = "reliable_executor_schedule_skipped_total";
/// Histogram: fire time minus tick time on the store's clock, by schedule.
pub const SCHEDULE_LAG_SECONDS: &str = "reliable_executor_schedule_lag_seconds";

/// Gauge: waiting tasks (`CREATED`/`PENDING`, due or not) per queue, by
/// namespace and queue, sampled by the leader.
pub const QUEUE_DEPTH: &str = "reliable_executor_queue_depth";
/// Gauge: of those, the tasks due now.
pub const QUEUE_DUE: &str = "reliable_executor_queue_due";
/// Gauge: how long the oldest due task of a queue has waited (store now
/// minus its due time; Sidekiq's "latency"), 0 when none is due.
pub const QUEUE_LATENCY_SECONDS: &str = "reliable_executor_queue_latency_seconds";
/// Gauge: 1 while a queue is paused, else 0.
pub const QUEUE_PAUSED: &str = "reliable_executor_queue_paused";
/// Gauge: tasks of a queue running now across the fleet (what a
/// concurrency limit counts).
pub const QUEUE_RUNNING: &str = "reliable_executor_queue_running";
/// Gauge: claims a queue's limit cut short while it had more due tasks, a
/// running total kept by the store (use `rate()` or `increase()` on it).
pub const QUEUE_THROTTLED: &str = "reliable_executor_queue_throttled_claims";

/// Registers help text and units for every metric. The executor calls it
/// at build time; call it yourself before scraping from a producer-only process.
pub fn describe() {
    describe_counter!(SUBMITTED, "Tasks submitted, by task name and outcome (created, existing, debounced).");
    describe_counter!(STARTED, "Attempts started, by task name.");
    describe_counter!(COMPLETED, "Tasks completed, by task name.");
    describe_counter!(FAILED, "Attempts that failed (error, panic or attempt timeout), by task name.");
    describe_counter!(RETRIED, "Retries scheduled after a failed attempt, by task name.");
    describe_counter!(TIMED_OUT, "Tasks that ran past max_duration, by task name.");
    describe_counter!(
        DEAD_LETTERED,
        "Tasks moved to the dead letter (FAILED, TIMEOUT, ERROR), by task name and state."
    );
    describe_counter!(
        RECOVERED,
        "Expired leases recovered by the leader, by outcome (retried, failed, timed_out)."
    );
    describe_counter!(STALE_FENCE, "Finishes refused because the worker had lost its lease.");
    describe_counter!(
        UNKNOWN_TASK,
        "Tasks claimed by a worker without their handler (rolling deploy), by task name and outcome \
         (postponed, dead_lettered)."
    );
    describe_counter!(TRIMMED, "Finished tasks deleted by the retention policy.");
    describe_histogram!(EXECUTION_SECONDS, Unit::Seconds, "Run time of one attempt, by task name.");
    describe_histogram!(QUEUE_WAIT_SECONDS, Unit::Seconds, "Time from due to start, by task name.");
    describe_gauge!(IN_FLIGHT, "Attempts running in this process.");
    describe_gauge!(FREE_SLOTS, "Free worker slots in this process.");
    describe_gauge!(TASKS, "Tasks in the namespace by state, sampled by the leader.");
    describe_counter!(
        COALESCE_ABSORBED,
        "Debounced submits absorbed in process by a Coalescer, by task name."
    );
    describe_counter!(
        COALESCE_FORWARDED,
        "Debounced submits a Coalescer forwarded to the store, by task name."
    );
    describe_counter!(PROMOTED, "Tasks moved from the cold to the hot store by TieredStorage.");
    describe_counter!(
        PROMOTION_REFUSED,
        "Cold tasks the hot store refused to import (damaged records); they stay cold."
    );
    describe_histogram!(
        PROMOTION_LAG_SECONDS,
        Unit::Seconds,
        "How late a task reached the hot store, relative to when it came within the horizon."
    );
    describe_gauge!(LEADER, "1 while this process leads housekeeping, else 0.");
    describe_counter!(SCHEDULE_FIRED, "Cron ticks that submitted a task, by schedule and outcome.");
    describe_counter!(
        SCHEDULE_SKIPPED,
        "Cron ticks passed without a task, by schedule and reason (overlap, misfire, paused, refused)."
    );
    describe_histogram!(
        SCHEDULE_LAG_SECONDS,
        Unit::Seconds,
        "How late a cron tick was submitted (fire time minus tick time, store clock), by schedule."
    );
    describe_gauge!(QUEUE_DEPTH, "Waiting tasks per queue (due or not), sampled by the leader.");
    describe_gauge!(QUEUE_DUE, "Tasks due now per queue, sampled by the leader.");
    describe_gauge!(
        QUEUE_LATENCY_SECONDS,
        Unit::Seconds,
        "How long the oldest due task of each queue has waited (store clock), sampled by the leader."
    );
    describe_gauge!(QUEUE_PAUSED, "1 while a queue is paused fleet-wide, else 0.");
    describe_gauge!(
        QUEUE_RUNNING,
        "Tasks of each queue running now across the fleet, sampled by the leader."
    );
    describe_gauge!(
        HANDLER_SETS,
        "Distinct handler sets among a namespace's workers (set by its leader); above 1 while they differ."
    );
}

pub(crate) fn submitted(task: &str, outcome: SubmitOutcome) {
    let outcome = match outcome {
        SubmitOutcome::Created => "created",
        SubmitOutcome::Existing => "existing",
        SubmitOutcome::Debounced => "debounced",
    };
    counter!(SUBMITTED, "task" => task.to_owned(), "outcome" => outcome).increment(1);
}

pub(crate) fn started(task: &str, queue_wait: Duration) {
    counter!(STARTED, "task" => task.to_owned()).increment(1);
    histogram!(QUEUE_WAIT_SECONDS, "task" => task.to_owned()).record(queue_wait.as_secs_f64());
}

pub(crate) fn finished(task: &str, state: TaskState, failed_attempt: bool, retried: bool, run: Duration) {
    histogram!(EXECUTION_SECONDS, "task" => task.to_owned()).record(run.as_secs_f64());
    if failed_attempt {
        counter!(FAILED, "task" => task.to_owned()).increment(1);
    }
    match state {
        TaskState::Completed => counter!(COMPLETED, "task" => task.to_owned()).increment(1),
        TaskState::Pending if retried => counter!(RETRIED, "task" => task.to_owned()).increment(1),
        TaskState::Failed | TaskState::Timeout | TaskState::Error => {
            if state == TaskState::Timeout {
                counter!(TIMED_OUT, "task" => task.to_owned()).increment(1);
            }
            counter!(DEAD_LETTERED, "task" => task.to_owned(), "state" => state.as_str()).increment(1);
        }
        _ => {}
    }
}

pub(crate) fn unknown_task(task: &str, outcome: &'static str) {
    counter!(UNKNOWN_TASK, "task" => task.to_owned(), "outcome" => outcome).increment(1);
}

pub(crate) fn stale_fence() {
    counter!(STALE_FENCE).increment(1);
}

pub(crate) fn recovered(outcome: &'static str, n: usize) {
    if n > 0 {
        counter!(RECOVERED, "outcome" => outcome).increment(n as u64);
    }
}

pub(crate) fn trimmed(n: u64) {
    if n > 0 {
        counter!(TRIMMED).increment(n);
    }
}

pub(crate) fn slots(ns: &Namespace, in_flight: usize, free: usize) {
    gauge!(IN_FLIGHT, "namespace" => ns.as_str().to_owned()).set(in_flight as f64);
    gauge!(FREE_SLOTS, "namespace" => ns.as_str().to_owned()).set(free as f64);
}

pub(crate) fn leader(ns: &Namespace, is_leader: bool) {
    gauge!(LEADER, "namespace" => ns.as_str().to_owned()).set(if is_leader { 1.0 } else { 0.0 });
}

pub(crate) fn schedule_fired(schedule: &str, outcome: SubmitOutcome, lag: Duration) {
    let outcome = if outcome == SubmitOutcome::Created { "created" } else { "existing" };
    counter!(SCHEDULE_FIRED, "schedule" => schedule.to_owned(), "outcome" => outcome).increment(1);
    histogram!(SCHEDULE_LAG_SECONDS, "schedule" => schedule.to_owned()).record(lag.as_secs_f64());
}

pub(crate) fn schedule_skipped(schedule: &str, reason: &'static str, n: u64) {
    if n > 0 {
        counter!(SCHEDULE_SKIPPED, "schedule" => schedule.to_owned(), "reason" => reason).increment(n);
    }
}

pub(crate) fn handler_sets(ns: &Namespace, sets: usize) {
    gauge!(HANDLER_SETS, "namespace" => ns.as_str().to_owned()).set(sets as f64);
}

pub(crate) fn task_counts(ns: &Namespace, counts: &StateCounts) {
    for state in TaskState::ALL {
        gauge!(TASKS, "namespace" => ns.as_str().to_owned(), "state" => state.as_str())
            .set(counts.get(state) as f64);
    }
}

/// Sets the queue gauges from one sample; queues of an earlier sample that
/// are gone (drained, resumed and empty) are set to zero.
pub(crate) fn queues(
    ns: &Namespace,
    queues: &[crate::queue::QueueInfo],
    now: crate::Timestamp,
    seen: &mut std::collections::BTreeSet<crate::QueueName>,
) {
    let set = |q: &crate::QueueName,
               depth: f64,
               due: f64,
               latency: f64,
               paused: f64,
               running: f64,
               throttled: f64| {
        let labels = [("namespace", ns.as_str().to_owned()), ("queue", q.as_str().to_owned())];
        gauge!(QUEUE_DEPTH, &labels).set(depth);
        gauge!(QUEUE_DUE, &labels).set(due);
        gauge!(QUEUE_LATENCY_SECONDS, &labels).set(latency);
        gauge!(QUEUE_PAUSED, &labels).set(paused);
        gauge!(QUEUE_RUNNING, &labels).set(running);
        gauge!(QUEUE_THROTTLED, &labels).set(throttled);
    };
    let mut now_seen = std::collections::BTreeSet::new();
    for q in queues {
        let latency = q.oldest_due.map_or(0.0, |due| now.since(due).as_secs_f64());
        set(
            &q.queue,
            q.waiting as f64,
            q.due as f64,
            latency,
            if q.paused { 1.0 } else { 0.0 },
            q.running as f64,
            q.throttled as f64,
        );
        now_seen.insert(q.queue.clone());
    }
    for gone in seen.difference(&now_seen) {
        set(gone, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    }
    *seen = now_seen;
}
