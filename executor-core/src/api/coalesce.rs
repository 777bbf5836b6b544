//! An in-process coalescer for debounced submits: repeats of a key within a
//! short local window are absorbed before they reach the store (the seed's
//! Caffeine cache, here on `moka`).

use std::{collections::HashMap, fmt, sync::Arc, time::Duration};

use metrics::counter;
use moka::future::Cache;
use tokio::sync::Mutex;

use crate::{
    Error, Result, Submit, SubmitOutcome, Submitted, TaskId,
    metrics::{COALESCE_ABSORBED as ABSORBED, COALESCE_FORWARDED as FORWARDED},
    storage::{NewTask, SubmitMode},
};

/// Wraps any [`Submit`] (a `Client` or an `Executor`) and absorbs repeated
/// debounced submits of one key locally.
///
/// The first debounced submit of a key goes to the store at once; repeats
/// within `local_window` only replace the payload held here; when the window
/// ends, the last payload goes to the store as one more debounced submit,
/// which moves the task's due time to `now + window`. So the task still runs
/// once, after the key's last submit, with its last payload — and the store
/// sees at most two writes per key per local window instead of one per
/// submit. Plain and idempotent submits, and task names without a rule, pass
/// straight through.
///
/// Keep `local_window` well below the debounce window (at most half is
/// enforced), so the flush reaches the store before the task falls due.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::{Client, MemoryStorage, Namespace, TaskBuilder, TaskOptions, coalesce::Coalescer};
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("stats")?);
/// let coalescer = Coalescer::new(client.clone()).rule("refresh_stats", Duration::from_millis(100));
/// for views in 0..50u32 {
///     TaskBuilder::new("refresh_stats", views, TaskOptions::new())
///         .debounce("user-42", Duration::from_secs(1))
///         .submit(&coalescer)
///         .await?;
/// }
/// let stats = coalescer.stats();
/// assert_eq!(stats.forwarded + stats.absorbed, 50);
/// assert!(stats.absorbed >= 48);
/// # Ok::<(), reliable_executor::Error>(()) })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Coalescer<C> {
    inner: C,
    rules: Arc<HashMap<String, Duration>>,
    slots: Cache<(String, String), Arc<Mutex<Slot>>>,
    stats: Arc<std::sync::Mutex<CoalesceStats>>,
}

/// Counts of what a [`Coalescer`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoalesceStats {
    /// Submits absorbed in process.
    pub absorbed: u64,
    /// Submits sent to the store as they came (each opens a key's window).
    pub forwarded: u64,
    /// Store writes at the end of a window, carrying the last absorbed payload.
    pub flushed: u64,
}

impl CoalesceStats {
    /// Store writes in all: `forwarded + flushed`.
    pub fn store_writes(&self) -> u64 {
        self.forwarded + self.flushed
    }
}

#[derive(Clone, Copy)]
enum Event {
    Absorbed,
    Forwarded,
    Flushed,
}

#[derive(Debug, Default)]
struct Slot {
    /// The task the key's window is absorbing into, while the window is open.
    id: Option<TaskId>,
    /// The last submit absorbed in this window, flushed when it ends.
    pending: Option<NewTask>,
}

impl<C: Clone> Clone for Coalescer<C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            rules: Arc::clone(&self.rules),
            slots: self.slots.clone(),
            stats: Arc::clone(&self.stats),
        }
    }
}

impl<C> fmt::Debug for Coalescer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coalescer")
            .field("rules", &self.rules)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<C> Coalescer<C> {
    /// A coalescer with no rules (everything passes through) holding at most
    /// 100,000 keys; past that the least recently used keys go straight to the store.
    pub fn new(inner: C) -> Self {
        Self::with_capacity(inner, 100_000)
    }

    /// A coalescer holding at most `max_keys` keys.
    pub fn with_capacity(inner: C, max_keys: u64) -> Self {
        Self {
            inner,
            rules: Arc::new(HashMap::new()),
            slots: Cache::builder().max_capacity(max_keys).time_to_idle(Duration::from_secs(60)).build(),
            stats: Arc::new(std::sync::Mutex::new(CoalesceStats::default())),
        }
    }

    /// Absorbs debounced submits of `task_name` within `local_window`.
    pub fn rule(mut self, task_name: impl Into<String>, local_window: Duration) -> Self {
        Arc::make_mut(&mut self.rules).insert(task_name.into(), local_window);
        self
    }

    /// What was absorbed and forwarded so far.
    pub fn stats(&self) -> CoalesceStats {
        *self.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The wrapped client or executor.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    fn count(&self, task: &str, event: Event) {
        let mut s = self.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match event {
            Event::Absorbed => s.absorbed += 1,
            Event::Forwarded => s.forwarded += 1,
            Event::Flushed => s.flushed += 1,
        }
        let name = if matches!(event, Event::Absorbed) { ABSORBED } else { FORWARDED };
        counter!(name, "task" => task.to_owned()).increment(1);
    }
}

impl<C: Submit + Clone + 'static> Submit for Coalescer<C> {
    async fn submit_new(&self, task: NewTask) -> Result<Submitted> {
        let (key, window) = match (&task.mode, self.rules.get(&task.name)) {
            (SubmitMode::Debounce(d), Some(local)) => {
                if *local * 2 > d.window {
                    return Err(Error::invalid(
                        "debounce",
                        format!(
                            "the local window of `{}` ({local:?}) must be at most half the debounce window ({:?})",
                            task.name, d.window
                        ),
                    ));
                }
                (d.key.clone(), *local)
            }
            _ => return self.inner.submit_new(task).await,
        };
        let name = task.name.clone();
        let cell =
            self.slots.get_with((name.clone(), key), async { Arc::new(Mutex::new(Slot::default())) }).await;
        let mut slot = cell.lock().await;
        if let Some(id) = slot.id.clone() {
            slot.pending = Some(task);
            self.count(&name, Event::Absorbed);
            return Ok(Submitted::new(id, SubmitOutcome::Debounced));
        }
        // Opens the key's window; repeats wait on the slot's lock meanwhile
        // and are absorbed once it is open.
        let submitted = self.inner.submit_new(task).await?;
        self.count(&name, Event::Forwarded);
        slot.id = Some(submitted.id.clone());
        drop(slot);
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(window).await;
            this.flush(&cell, &name).await;
        });
        Ok(submitted)
    }
}

impl<C: Submit + Clone + 'static> Coalescer<C> {
    /// Ends a key's window: the last absorbed payload goes to the store.
    async fn flush(&self, cell: &Mutex<Slot>, name: &str) {
        let mut slot = cell.lock().await;
        slot.id = None;
        let Some(task) = slot.pending.take() else { return };
        let mut pause = Duration::from_millis(20);
        for attempt in 1..=5 {
            match self.inner.submit_new(task.clone()).await {
                Ok(_) => {
                    self.count(name, Event::Flushed);
                    return;
                }
                Err(e) if e.is_retryable() && attempt < 5 => {
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                Err(e) => {
                    // The task exists in the store (the window's first submit
                    // reached it); only this latest payload is lost.
                    tracing::error!(error = %e, task = name, "coalesced debounce flush failed; the task keeps its earlier payload");
                    return;
                }
            }
        }
    }
}
