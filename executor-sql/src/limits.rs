//! What a claim of this process knows about queue limits before it asks.

use std::{collections::HashSet, sync::Mutex};

use executor_core::{Namespace, QueueName, queue::QueueLimits};

/// The (namespace, queue) pairs this process has seen with limits: a hint
/// of which queues a claim takes through the limited transaction first.
/// Only a hint: the plain claim statement excludes limited queues itself,
/// so a queue limited by another process is found there and remembered.
#[derive(Debug, Default)]
pub struct LimitedQueues(Mutex<HashSet<(String, String)>>);

impl LimitedQueues {
    /// Whether this process has seen limits on `queue`.
    pub fn known(&self, ns: &Namespace, queue: &QueueName) -> bool {
        self.0.lock().is_ok_and(|set| set.contains(&(ns.as_str().to_owned(), queue.as_str().to_owned())))
    }

    /// Notes that `queue` has limits.
    pub fn remember(&self, ns: &Namespace, queue: &QueueName) {
        if let Ok(mut set) = self.0.lock() {
            set.insert((ns.as_str().to_owned(), queue.as_str().to_owned()));
        }
    }

    /// Notes that `queue` has no limits any more.
    pub fn forget(&self, ns: &Namespace, queue: &QueueName) {
        if let Ok(mut set) = self.0.lock() {
            set.remove(&(ns.as_str().to_owned(), queue.as_str().to_owned()));
        }
    }
}

/// How a limited claim of one queue ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It took all it was asked for; the limits may allow more.
    Full,
    /// A limit, the queue's due tasks, a pause or corrupt limits stopped it:
    /// asking again in the same claim would get nothing more.
    Done,
    /// Another claimer holds the queue's row right now.
    Busy,
    /// The queue has no limits (any more): claim it the plain way.
    Unlimited,
}

/// A queue's row as stored (each dialect reads its own column types into
/// it; a negative value of a hand-edited row reads as 0, out of range, so
/// the limits are corrupt and the queue fails closed).
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// Whether the queue is paused.
    pub paused: bool,
    /// The most running tasks.
    pub concurrency: Option<u32>,
    /// Starts per period.
    pub rate_starts: Option<u32>,
    /// The period, in milliseconds.
    pub rate_per_ms: Option<u64>,
    /// The bucket's size.
    pub rate_burst: Option<u32>,
    /// Tokens in the bucket at `tokens_at`.
    pub tokens: f64,
    /// When the bucket held `tokens` (server milliseconds).
    pub tokens_at: i64,
    /// How many times a limit held back due tasks.
    pub throttled: u64,
}

impl Stored {
    /// Whether any limit is set.
    pub fn has_limits(&self) -> bool {
        self.concurrency.is_some()
            || self.rate_starts.is_some()
            || self.rate_per_ms.is_some()
            || self.rate_burst.is_some()
    }

    /// The limits, or why the stored values are not limits.
    ///
    /// # Errors
    /// The columns do not make limits (out of range, half a rate).
    pub fn limits(&self) -> Result<QueueLimits, String> {
        QueueLimits::from_columns(self.concurrency, self.rate_starts, self.rate_per_ms, self.rate_burst)
    }

    /// What the queue list shows of them.
    pub fn shown(&self) -> QueueLimits {
        QueueLimits::shown_from_columns(self.concurrency, self.rate_starts, self.rate_per_ms, self.rate_burst)
    }
}
