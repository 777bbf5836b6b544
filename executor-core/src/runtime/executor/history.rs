//! Counting finished attempts for the store's throughput history (issue
//! 18): each attempt adds one to its name's tally in memory, and a
//! background task adds the tally to the store with one
//! [`HistoryStore::add_history`](crate::storage::HistoryStore::add_history) call every `history_interval`, and a last time
//! at shutdown. No store call per task.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use super::run::Shared;
use crate::{
    id::MAX_ID_LEN,
    storage::{ExecutorStorage, HistoryCount},
};

/// The most task names one process keeps counts for between flushes; a
/// name beyond it is dropped with a warning, so a store that stays down
/// cannot make the tally grow without bound (memory stays bounded).
pub(crate) const MAX_TALLY_NAMES: usize = 10_000;

/// Attempts finished since the last successful flush, by task name.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    counts: BTreeMap<String, (u64, u64)>,
    /// A name was dropped since the last warning.
    dropped: u64,
}

impl Tally {
    /// Counts one finished attempt of `name`.
    pub(crate) fn record(&mut self, name: &str, succeeded: bool) {
        // What a store would refuse (only a hand-edited record has such a
        // name) is not counted, so it cannot make every flush fail.
        if name.is_empty() || name.len() > MAX_ID_LEN || name.contains('\0') {
            return;
        }
        let entry = if let Some(e) = self.counts.get_mut(name) {
            e
        } else if self.counts.len() >= MAX_TALLY_NAMES {
            self.dropped += 1;
            return;
        } else {
            self.counts.entry(name.to_owned()).or_default()
        };
        if succeeded {
            entry.0 = entry.0.saturating_add(1);
        } else {
            entry.1 = entry.1.saturating_add(1);
        }
    }

    /// Takes everything counted, leaving the tally empty, and how many
    /// attempts were dropped since the last take.
    fn take(&mut self) -> (Vec<HistoryCount>, u64) {
        let counts = std::mem::take(&mut self.counts)
            .into_iter()
            .map(|(name, (s, f))| HistoryCount::new(name, s, f))
            .collect();
        (counts, std::mem::take(&mut self.dropped))
    }

    /// Puts back counts a flush could not add, for the next try.
    fn restore(&mut self, counts: Vec<HistoryCount>) {
        for c in counts {
            if !self.counts.contains_key(&c.name) && self.counts.len() >= MAX_TALLY_NAMES {
                self.dropped = self.dropped.saturating_add(c.succeeded).saturating_add(c.failed);
                continue;
            }
            let e = self.counts.entry(c.name).or_default();
            e.0 = e.0.saturating_add(c.succeeded);
            e.1 = e.1.saturating_add(c.failed);
        }
    }
}

/// Adds the tally to the store; on failure, keeps it for the next try.
/// Answers whether the store took it.
async fn flush<S: ExecutorStorage>(shared: &Shared<S>) -> bool {
    let (counts, dropped) = shared.tally().take();
    if dropped > 0 {
        tracing::warn!(
            dropped,
            limit = MAX_TALLY_NAMES,
            "throughput history: attempts of task names beyond the limit of names kept between flushes \
             were not counted"
        );
    }
    if counts.is_empty() {
        return true;
    }
    let storage = shared.executor.client().storage_arc();
    match storage.add_history(shared.executor.namespace(), &counts).await {
        Ok(()) => true,
        Err(e @ crate::Error::Invalid { .. }) => {
            tracing::error!(error = %e, names = counts.len(), "the store refused this throughput history; dropped");
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, names = counts.len(), "adding to the throughput history failed; kept for the next try");
            shared.tally().restore(counts);
            false
        }
    }
}

/// Flushes every `every` until `stop`, then once more (the attempts that
/// drained during shutdown).
pub(super) async fn run<S: ExecutorStorage>(
    shared: Arc<Shared<S>>,
    every: Duration,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        flush(&shared).await;
    }
    if !flush(&shared).await {
        tracing::warn!("the last throughput history of this process could not be added at shutdown");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_counts_restores_and_stays_bounded() {
        let mut t = Tally::default();
        t.record("a", true);
        t.record("a", false);
        t.record("b", false);
        t.record("", true);
        let (counts, dropped) = t.take();
        assert_eq!(counts, [HistoryCount::new("a", 1, 1), HistoryCount::new("b", 0, 1)]);
        assert_eq!(dropped, 0);
        t.record("a", true);
        t.restore(counts);
        assert_eq!(t.take().0, [HistoryCount::new("a", 2, 1), HistoryCount::new("b", 0, 1)]);
        for i in 0..MAX_TALLY_NAMES {
            t.record(&format!("n{i}"), true);
        }
        t.record("one-too-many", true);
        t.record("n0", false);
        let (counts, dropped) = t.take();
        assert_eq!(counts.len(), MAX_TALLY_NAMES);
        assert_eq!(dropped, 1);
        assert!(counts.iter().any(|c| c.name == "n0" && c.failed == 1), "known names still count");
    }
}
