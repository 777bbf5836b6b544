//! What a claim of this process knows about queue limits before it asks.

use std::{collections::HashSet, sync::Mutex};

use executor_core::{Namespace, QueueName};

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
