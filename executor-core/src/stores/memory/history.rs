//! Throughput history of one namespace: a bucket per (minute, name).

use crate::{
    Timestamp,
    storage::{HistoryBucket, HistoryCount, minute_of},
};

use super::space::Space;

impl Space {
    /// Adds `counts` to the buckets of `now`'s minute, saturating.
    pub(super) fn add_history(&mut self, now: Timestamp, counts: &[&HistoryCount]) {
        let minute = minute_of(now);
        for c in counts {
            let bucket = self.history.entry((minute, c.name.clone())).or_default();
            bucket.0 = bucket.0.saturating_add(c.succeeded);
            bucket.1 = bucket.1.saturating_add(c.failed);
        }
    }

    /// Every bucket from `since`'s minute on, by minute then name.
    pub(super) fn history(&self, since: Timestamp) -> Vec<HistoryBucket> {
        self.history
            .range((since, String::new())..)
            .map(|((minute, name), (s, f))| HistoryBucket::new(*minute, name.clone(), *s, *f))
            .collect()
    }

    /// Deletes the buckets before `before`; how many went.
    pub(super) fn trim_history(&mut self, before: Timestamp) -> u64 {
        let kept = self.history.split_off(&(before, String::new()));
        let gone = self.history.len() as u64;
        self.history = kept;
        gone
    }
}
