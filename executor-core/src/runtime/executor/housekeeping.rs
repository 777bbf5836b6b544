//! Housekeeping on the elected leader only: reap expired leases, trim by
//! retention, sample counts by state, compare the handler sets of the
//! namespace's workers. Another process takes over within one lease when the
//! leader dies. Every worker announces its handler names.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{config::Config, run::Shared};
use crate::{
    Namespace, TaskState, metrics as m,
    query::WorkerInfo,
    storage::{ExecutorStorage, Leadership, Reaped},
};

/// What the leader says when the workers of `ns` run different handler
/// sets: for each set, how many workers run it and which names they lack
/// that others run. `None` while every worker runs the same set.
fn handler_set_warning(ns: &Namespace, sets: &BTreeMap<&[String], usize>) -> Option<String> {
    if sets.len() < 2 {
        return None;
    }
    let all: BTreeSet<&String> = sets.keys().flat_map(|names| names.iter()).collect();
    let groups: Vec<String> = sets
        .iter()
        .map(|(names, n)| {
            let missing: Vec<&str> =
                all.iter().filter(|name| !names.contains(name)).map(|name| name.as_str()).collect();
            format!("{n} worker(s) without [{}]", missing.join(", "))
        })
        .collect();
    Some(format!(
        "the workers of namespace `{ns}` run {} different handler sets: {}. Expected for the length of a \
         rolling deploy; otherwise two services share this namespace and claim each other's tasks (each \
         should have its own `.namespace(..)`)",
        sets.len(),
        groups.join("; ")
    ))
}

/// Tells listeners what the reaper did, with each record after its change:
/// a task dead-lettered by the reaper reaches `on_dead_lettered` like one
/// dead-lettered by its worker. One read per recovered task, and only when
/// a listener is registered.
async fn tell_listeners<S: ExecutorStorage>(shared: &Shared<S>, reaped: &Reaped) {
    let listeners = shared.executor.client().listeners();
    if listeners.is_empty() {
        return;
    }
    let storage = shared.executor.client().storage_arc();
    let ns = shared.executor.namespace();
    let groups = [
        (&reaped.retried, TaskState::Pending),
        (&reaped.failed, TaskState::Failed),
        (&reaped.timed_out, TaskState::Timeout),
    ];
    for (ids, state) in groups {
        for id in ids {
            let record = match storage.get(ns, id).await {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, task.id = %id, "reading a reaped task for listeners failed");
                    continue;
                }
            };
            let error = record.last_error.clone().unwrap_or_else(|| "lease expired".to_owned());
            if state == TaskState::Pending {
                listeners.retry_scheduled(&record, &error, 0);
            } else {
                listeners.dead_lettered(&record, state, &error);
            }
        }
    }
}

/// Trims by retention, repeating full batches until one comes back short
/// or the tick's budget is spent; answers whether a backlog is left (the
/// last batch was full), so the next tick trims again without waiting for
/// `trim_every`.
async fn trim<S: ExecutorStorage>(storage: &S, ns: &Namespace, config: &Config, budget_end: Instant) -> bool {
    loop {
        match storage.trim(ns, &config.retention, config.trim_batch).await {
            Ok(n) => {
                m::trimmed(n);
                let full = usize::try_from(n).unwrap_or(usize::MAX) >= config.trim_batch;
                if !full || Instant::now() >= budget_end {
                    return full;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "retention trim failed");
                return false;
            }
        }
    }
}

/// Deletes the throughput history older than `history_keep`, counted
/// back from the store's now so every leader agrees on what is kept.
async fn trim_history<S: ExecutorStorage>(storage: &S, ns: &Namespace, config: &Config) {
    let now = match storage.now(ns).await {
        Ok(now) => now,
        Err(e) => {
            tracing::warn!(error = %e, "reading the store's clock to trim history failed");
            return;
        }
    };
    match storage.trim_history(ns, now.saturating_sub(config.history_keep)).await {
        Ok(n) => tracing::debug!(deleted = n, "trimmed throughput history"),
        Err(crate::Error::Unsupported { .. }) => {}
        Err(e) => tracing::warn!(error = %e, "trimming throughput history failed"),
    }
}

pub(super) async fn run<S: ExecutorStorage>(shared: Arc<Shared<S>>, stop: CancellationToken) {
    let config = shared.config().clone();
    let storage = Arc::clone(shared.executor.client().storage_arc());
    let ns = shared.executor.namespace().clone();
    let worker = shared.executor.worker_id().clone();
    let mut tick = tokio::time::interval(config.housekeeping);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut term: Option<Leadership> = None;
    let mut last_trim: Option<Instant> = None;
    // The last trim came back full: finished tasks are piling up faster
    // than one call a `trim_every` removes them.
    let mut trim_backlog = false;
    let mut last_counts: Option<Instant> = None;
    let mut last_history_trim: Option<Instant> = None;
    let mut queues_seen = std::collections::BTreeSet::new();
    let mut queues_next = Instant::now();
    let mut counts_next = Instant::now();
    let mut names: Vec<String> = shared.executor.registry().names().into_iter().map(str::to_owned).collect();
    names.sort();
    let mut last_announce: Option<Instant> = None;
    // The last warning given, so a lasting difference is logged once.
    let mut warned: Option<String> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        if last_announce.is_none_or(|t| now.duration_since(t) >= config.counts_every) {
            last_announce = Some(now);
            let ttl = config.counts_every.saturating_mul(3).saturating_add(config.lease);
            if let Err(e) = storage.announce(&ns, &worker, &names, ttl).await {
                tracing::warn!(error = %e, "announcing this worker's handlers failed");
            }
        }
        term = match storage.acquire_leadership(&ns, &worker, config.lease).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "leadership renewal failed");
                None
            }
        };
        m::leader(&ns, term.is_some());
        shared.leadership.send_if_modified(|held| {
            let changed = held.as_ref().map(|t| t.token) != term.as_ref().map(|t| t.token);
            *held = term.clone();
            changed
        });
        if term.is_none() {
            continue;
        }
        let budget_end = Instant::now() + config.housekeeping_budget;
        // Full batches repeat within the budget, so recovery keeps up with
        // any number of dead workers' leases.
        loop {
            match storage.reap(&ns, config.reap_batch).await {
                Ok(reaped) if !reaped.is_empty() => {
                    tracing::warn!(
                        retried = reaped.retried.len(),
                        failed = reaped.failed.len(),
                        timed_out = reaped.timed_out.len(),
                        "recovered tasks whose worker stopped renewing its lease"
                    );
                    m::recovered("retried", reaped.retried.len());
                    m::recovered("failed", reaped.failed.len());
                    m::recovered("timed_out", reaped.timed_out.len());
                    tell_listeners(&shared, &reaped).await;
                    if reaped.len() < config.reap_batch || Instant::now() >= budget_end {
                        break;
                    }
                }
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "reap failed");
                    break;
                }
            }
        }
        if let Err(e) = storage.housekeeping(&ns).await {
            tracing::warn!(error = %e, "storage housekeeping failed");
        }
        let now = Instant::now();
        if trim_backlog || last_trim.is_none_or(|t| now.duration_since(t) >= config.trim_every) {
            last_trim = Some(now);
            trim_backlog = trim(&*storage, &ns, &config, budget_end).await;
        }
        if last_history_trim.is_none_or(|t| now.duration_since(t) >= config.trim_every) {
            last_history_trim = Some(now);
            trim_history(&*storage, &ns, &config).await;
        }
        if last_counts.is_none_or(|t| now.duration_since(t) >= config.counts_every) {
            last_counts = Some(now);
            paced(&mut counts_next, async {
                match storage.counts(&ns).await {
                    Ok(c) => m::task_counts(&ns, &c),
                    Err(e) => tracing::warn!(error = %e, "sampling counts failed"),
                }
            })
            .await;
            paced(&mut queues_next, sample_queues(&*storage, &ns, &mut queues_seen)).await;
            match storage.workers(&ns).await {
                Ok(workers) => {
                    let sets = WorkerInfo::handler_sets(&workers);
                    m::handler_sets(&ns, sets.len());
                    let warning = handler_set_warning(&ns, &sets);
                    if let Some(text) = &warning
                        && warning != warned
                    {
                        tracing::warn!("{text}");
                    }
                    warned = warning;
                }
                Err(e) => tracing::warn!(error = %e, "reading the workers' announcements failed"),
            }
        }
    }
    shared.leadership.send_replace(None);
    if let Some(t) = term {
        if let Err(e) = storage.release_leadership(&ns, &t).await {
            tracing::warn!(error = %e, "releasing leadership failed; it expires after one lease");
        }
        m::leader(&ns, false);
    }
}

/// Runs `sample` unless the last one is too recent for what it cost: a
/// sample that took `t` is not repeated within `20 × t`, so a store that
/// counts by scanning (SQL: a `GROUP BY state` over the namespace, 0.7 s
/// with a million tasks retained on MariaDB) is sampled at most 5 % of the
/// time. `next` is when the next may run.
async fn paced(next: &mut Instant, sample: impl Future<Output = ()>) {
    if Instant::now() < *next {
        return;
    }
    let started = Instant::now();
    sample.await;
    *next = Instant::now() + started.elapsed().saturating_mul(20);
}

/// Samples the queue gauges (depth, due, latency on the store's clock,
/// paused); a store without queues is skipped quietly.
async fn sample_queues<S: ExecutorStorage>(
    storage: &S,
    ns: &crate::Namespace,
    seen: &mut std::collections::BTreeSet<crate::QueueName>,
) {
    let queues = match storage.queues(ns).await {
        Ok(q) => q,
        Err(crate::Error::Unsupported { .. }) => return,
        Err(e) => {
            tracing::warn!(error = %e, "sampling queues failed");
            return;
        }
    };
    let now = if queues.iter().any(|q| q.oldest_due.is_some()) {
        match storage.now(ns).await {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!(error = %e, "reading the store's clock for queue latency failed");
                return;
            }
        }
    } else {
        crate::Timestamp::default()
    };
    m::queues(ns, &queues, now, seen);
}
