//! What callers ask the store and what it answers: a page of tasks in one
//! state ([`ListQuery`], [`Page`], also at the crate root), counts by state
//! ([`StateCounts`]), what a cancel did ([`CancelOutcome`]), the workers
//! that announced themselves ([`WorkerInfo`]), records that no longer
//! decode ([`Unreadable`]), and how long finished tasks are kept
//! ([`Retention`]).

use std::{collections::BTreeMap, time::Duration};

use serde::{Deserialize, Serialize};

use crate::{TaskRecord, TaskState, Timestamp, WorkerId};

/// What a cancel did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CancelOutcome {
    /// The task was waiting and is now `CANCELLED`.
    Cancelled,
    /// The task is running; its worker will be asked to stop.
    Requested,
}

impl CancelOutcome {
    /// The name used in JSON: `cancelled`, `requested`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::Requested => "requested",
        }
    }
}

/// The largest page `list` returns: [`ListQuery::limit`] is 1 to this.
pub const MAX_PAGE_SIZE: usize = 1_000;

/// A page request for `list`: [`ListQuery::new`], optionally
/// [`ListQuery::name`] to keep one task name, then [`ListQuery::after`] with
/// the previous page's `next`.
///
/// Every store answers a page by reading an index range that starts at the
/// cursor, never by counting from the first task, so page 1,000 of a state
/// with millions of tasks costs what page 1 costs. A name filter is answered
/// by the store too (an index on state and name in the SQL stores, the
/// in-memory store's own index; Redis checks the name of each entry it
/// walks, at most 16,000 per page, so a rare name may come back in short
/// pages that still carry `next`).
///
/// ```
/// use reliable_executor::{ListQuery, TaskState};
///
/// let first = ListQuery::new(TaskState::Failed, 50).name("sync_crm");
/// let second = first.clone().after("cursor-from-first-page");
/// assert_eq!(second.cursor.as_deref(), Some("cursor-from-first-page"));
/// assert_eq!(second.name.as_deref(), Some("sync_crm"));
/// assert!(first.validate().is_ok());
/// assert!(ListQuery::new(TaskState::Failed, 0).validate().is_err());
/// ```
///
/// A literal does not compile outside this crate, so fields can be added:
///
/// ```compile_fail
/// use reliable_executor::{ListQuery, TaskState};
///
/// let q = ListQuery { state: TaskState::Failed, cursor: None, limit: 50 };
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListQuery {
    /// The state to list.
    pub state: TaskState,
    /// The `next` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1 to [`MAX_PAGE_SIZE`].
    pub limit: usize,
    /// Only tasks of this name; `None` lists every name.
    pub name: Option<String>,
}

impl ListQuery {
    /// First page of `state`, `limit` tasks.
    pub fn new(state: TaskState, limit: usize) -> Self {
        Self { state, cursor: None, limit, name: None }
    }

    /// Only tasks named `name` (the handler name they were submitted to).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Refuses a page size outside 1..=[`MAX_PAGE_SIZE`] and a name no task
    /// can have (empty, longer than [`crate::id::MAX_ID_LEN`] bytes, a
    /// control character, whitespace), with [`crate::Error::Invalid`]. Every store
    /// checks this first.
    pub fn validate(&self) -> crate::Result<()> {
        if self.limit == 0 || self.limit > MAX_PAGE_SIZE {
            return Err(crate::Error::invalid(
                "page size",
                format!("{} is outside 1..={MAX_PAGE_SIZE}", self.limit),
            ));
        }
        if let Some(name) = &self.name {
            crate::id::validate_key("task name", name, crate::id::MAX_ID_LEN)?;
        }
        Ok(())
    }

    /// The page after the one whose `next` was `cursor`.
    #[must_use]
    pub fn after(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

/// One page of tasks.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Page {
    /// The tasks.
    pub tasks: Vec<TaskRecord>,
    /// Cursor of the next page; `None` on the last.
    pub next: Option<String>,
    /// Records in this page's range that did not parse (edited by hand,
    /// written by a newer version): skipped so the rest of the page still
    /// reads (no neighbour harm). Delete one with `delete`, or inspect
    /// it in the store.
    pub unreadable: Vec<Unreadable>,
}

impl Page {
    /// A page of `tasks` with cursor `next`, nothing unreadable.
    pub fn new(tasks: Vec<TaskRecord>, next: Option<String>) -> Self {
        Self { tasks, next, unreadable: Vec::new() }
    }
}

/// A stored record that a page skipped because it does not parse.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Unreadable {
    /// The task's id as stored (it may itself be what is wrong).
    pub id: String,
    /// What did not parse.
    pub reason: String,
}

impl Unreadable {
    /// The record stored under `id`, unreadable for `reason`.
    pub fn new(id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { id: id.into(), reason: reason.into() }
    }
}

/// A worker of a namespace and the task names it runs, as it last
/// announced them ([`crate::Client::workers`]). Every running executor
/// announces itself every `counts_interval` (default 10 s); the
/// announcement lapses after three intervals and one lease without another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerInfo {
    /// The worker.
    pub worker: WorkerId,
    /// The names of its handlers, sorted.
    pub names: Vec<String>,
    /// When the announcement lapses unless renewed, on the store's clock.
    pub until: Timestamp,
}

impl WorkerInfo {
    /// `worker` runs `names` (sorted here) until `until`.
    pub fn new(
        worker: WorkerId,
        names: impl IntoIterator<Item = impl Into<String>>,
        until: Timestamp,
    ) -> Self {
        let mut names: Vec<String> = names.into_iter().map(Into::into).collect();
        names.sort();
        names.dedup();
        Self { worker, names, until }
    }

    /// The distinct handler sets among `workers`, each with how many workers
    /// run it: one entry while they agree, more while they differ (a rolling
    /// deploy, or two services sharing a namespace).
    ///
    /// ```
    /// use reliable_executor::{Timestamp, WorkerId, query::WorkerInfo};
    /// let at = Timestamp::from_millis(0);
    /// let workers = [
    ///     WorkerInfo::new(WorkerId::new("a")?, ["charge"], at),
    ///     WorkerInfo::new(WorkerId::new("b")?, ["charge"], at),
    ///     WorkerInfo::new(WorkerId::new("c")?, ["charge", "refund"], at),
    /// ];
    /// assert_eq!(WorkerInfo::handler_sets(&workers).len(), 2);
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    pub fn handler_sets(workers: &[WorkerInfo]) -> BTreeMap<&[String], usize> {
        let mut sets = BTreeMap::new();
        for w in workers {
            *sets.entry(w.names.as_slice()).or_default() += 1;
        }
        sets
    }
}

/// Counts of tasks by state. Build one from `(state, count)` pairs.
///
/// ```
/// use reliable_executor::{TaskState, query::StateCounts};
///
/// let counts: StateCounts = [(TaskState::Pending, 3), (TaskState::Failed, 1)].into_iter().collect();
/// assert_eq!(counts.get(TaskState::Pending), 3);
/// assert_eq!(counts.get(TaskState::Running), 0);
/// assert_eq!(counts.total(), 4);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StateCounts(BTreeMap<TaskState, u64>);

impl FromIterator<(TaskState, u64)> for StateCounts {
    /// Counts of the same state add up.
    fn from_iter<I: IntoIterator<Item = (TaskState, u64)>>(iter: I) -> Self {
        let mut map = BTreeMap::new();
        for (state, n) in iter {
            *map.entry(state).or_insert(0) += n;
        }
        Self(map)
    }
}

impl StateCounts {
    /// Each state with a count, in state order (states never counted are
    /// absent; [`StateCounts::get`] answers 0 for them).
    pub fn iter(&self) -> impl Iterator<Item = (TaskState, u64)> + '_ {
        self.0.iter().map(|(s, n)| (*s, *n))
    }

    /// Sets the count of `state`.
    pub fn set(&mut self, state: TaskState, n: u64) {
        self.0.insert(state, n);
    }

    /// Tasks in `state`.
    pub fn get(&self, state: TaskState) -> u64 {
        self.0.get(&state).copied().unwrap_or(0)
    }

    /// All tasks.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// How long finished tasks are kept: [`Retention::default`] (completed a
/// day, dead letter a week), then the setters.
///
/// ```
/// use std::time::Duration;
/// use reliable_executor::query::Retention;
///
/// let keep = Retention::default()
///     .completed(Duration::from_secs(3_600))
///     .dead_letter(None) // dead-lettered tasks stay until requeued or deleted...
///     .dead_letter_max(10_000); // ...but at most the 10,000 latest
/// assert_eq!(keep.completed, Duration::from_secs(3_600));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// `COMPLETED` and `CANCELLED` tasks, counted from `finished_at`.
    pub completed: Duration,
    /// Dead-lettered tasks; `None` keeps them until requeued or deleted by hand.
    pub dead_letter: Option<Duration>,
    /// At most this many `COMPLETED` and `CANCELLED` tasks are kept, the
    /// most recently finished; `None`: no cap beyond the age.
    pub completed_max: Option<u64>,
    /// At most this many dead-lettered tasks are kept (Sidekiq keeps 10,000
    /// dead jobs), the most recently finished; `None`: no cap beyond the age.
    pub dead_letter_max: Option<u64>,
}

impl Default for Retention {
    /// Completed for a day, dead letter for a week.
    fn default() -> Self {
        Self {
            completed: Duration::from_secs(86_400),
            dead_letter: Some(Duration::from_secs(7 * 86_400)),
            completed_max: None,
            dead_letter_max: None,
        }
    }
}

impl Retention {
    /// Keeps `COMPLETED` and `CANCELLED` tasks for `keep` after they finish.
    #[must_use]
    pub fn completed(mut self, keep: Duration) -> Self {
        self.completed = keep;
        self
    }

    /// Keeps dead-lettered tasks for `keep` after they finish; `None` keeps
    /// them until requeued or deleted.
    #[must_use]
    pub fn dead_letter(mut self, keep: Option<Duration>) -> Self {
        self.dead_letter = keep;
        self
    }

    /// Keeps at most `n` `COMPLETED` and `CANCELLED` tasks (the most
    /// recently finished) besides the age limit: whichever removes more
    /// applies. On a partitioned Redis namespace the cap is shared out
    /// evenly, `ceil(n / partitions)` per partition.
    #[must_use]
    pub fn completed_max(mut self, n: u64) -> Self {
        self.completed_max = Some(n);
        self
    }

    /// Keeps at most `n` dead-lettered tasks (the most recently finished)
    /// besides the age limit, as [`Retention::completed_max`] does.
    #[must_use]
    pub fn dead_letter_max(mut self, n: u64) -> Self {
        self.dead_letter_max = Some(n);
        self
    }
}
