//! The attempt log: what each earlier attempt of a task did, kept on its
//! record so an operator's task page can show every attempt, not only the
//! last one.
//!
//! A [`TaskRecord`]'s own fields (`worker`, `started_at`, `finished_at`,
//! `last_error`) describe its current or last attempt and are overwritten by
//! the next claim. Before a store overwrites them it appends the attempt
//! that ended to [`TaskRecord::attempt_log`], in the same atomic step as the
//! transition: when an attempt is retried, when the reaper takes an expired
//! lease back and the task waits again, and when an operator requeues a
//! dead-lettered task. Nothing is written when an attempt completes, is
//! released or is postponed, so the happy path costs what it did.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{TaskId, TaskRecord, TaskState, Timestamp, WorkerId};

/// Most entries an attempt log keeps: a task retried more often keeps the
/// newest ones, the oldest are dropped.
pub const MAX_ATTEMPT_LOG: usize = 20;

/// Longest error text, in bytes, the runtime writes as a task's
/// `last_error`, and the longest one entry of an attempt log keeps (stores
/// cut a longer one at a character boundary; the SQL stores count the
/// characters of a requeued task's error instead). A log is thus at most
/// [`MAX_ATTEMPT_LOG`] times this.
pub const MAX_ERROR_LEN: usize = 8 * 1024;

/// How an attempt ended. The first three are the ones an attempt log
/// holds; the others describe the current or last attempt in
/// [`TaskRecord::all_attempts`].
///
/// In JSON: `failed`, `lease_expired`, `dead`, `running`, `completed`,
/// `cancelled`; a name this version does not know (written by a newer one)
/// reads as `unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// The handler returned an error, panicked or ran past its per-attempt
    /// timeout, and the task was retried.
    Failed,
    /// The reaper took the lease back from a dead or stuck worker and the
    /// task waited again.
    LeaseExpired,
    /// The attempt dead-lettered the task (`FAILED`, `TIMEOUT`, `ERROR`).
    /// Logged when an operator requeues it.
    Dead,
    /// Still running.
    Running,
    /// The handler succeeded.
    Completed,
    /// A cancel was delivered to it.
    Cancelled,
    /// An outcome this version does not know.
    #[serde(other)]
    Unknown,
}

impl AttemptOutcome {
    /// The name used in JSON, tables and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failed => "failed",
            Self::LeaseExpired => "lease_expired",
            Self::Dead => "dead",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attempt that ended before the task's current one: an entry of
/// [`TaskRecord::attempt_log`]. Times are the store's clock.
///
/// `#[non_exhaustive]`: build one with [`AttemptRecord::new`], then set
/// what is known.
///
/// ```
/// use reliable_executor::{Timestamp, WorkerId, attempt_log::{AttemptOutcome, AttemptRecord}};
///
/// let mut attempt = AttemptRecord::new(1, AttemptOutcome::Failed, Timestamp::from_millis(2_500));
/// attempt.worker = Some(WorkerId::new("host-1:4242")?);
/// attempt.started_at = Some(Timestamp::from_millis(2_000));
/// attempt.error = Some("connection refused".to_owned());
/// assert_eq!(attempt.duration(), Some(std::time::Duration::from_millis(500)));
/// let json = serde_json::to_string(&attempt)?;
/// assert!(json.contains(r#""outcome":"failed""#), "{json}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// Its number, from 1 (a requeue starts the count again).
    pub attempt: u32,
    /// The worker that ran it, when the store still knew it.
    #[serde(default)]
    pub worker: Option<WorkerId>,
    /// When it was claimed.
    #[serde(default)]
    pub started_at: Option<Timestamp>,
    /// When it ended: the retry, the reap, or the dead letter.
    pub ended_at: Timestamp,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Why, at most [`MAX_ERROR_LEN`] bytes.
    #[serde(default)]
    pub error: Option<String>,
}

impl AttemptRecord {
    /// Attempt number `attempt`, ended at `ended_at` with `outcome`; no
    /// worker, start or error known.
    pub fn new(attempt: u32, outcome: AttemptOutcome, ended_at: Timestamp) -> Self {
        Self { attempt, worker: None, started_at: None, ended_at, outcome, error: None }
    }

    /// How long it ran, when its start is known (and not after its end).
    pub fn duration(&self) -> Option<Duration> {
        let started = self.started_at?;
        (started <= self.ended_at).then(|| self.ended_at.since(started))
    }
}

/// One attempt as a task page shows it: an entry of the attempt log, or the
/// record's current or last attempt (which may still run: no end yet). See
/// [`TaskRecord::all_attempts`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AttemptSummary {
    /// Its number, from 1.
    pub attempt: u32,
    /// The worker that ran it, when known (a finished attempt's worker is
    /// known only from the log).
    pub worker: Option<WorkerId>,
    /// When it was claimed.
    pub started_at: Option<Timestamp>,
    /// When it ended; `None` while it runs.
    pub ended_at: Option<Timestamp>,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Why it failed.
    pub error: Option<String>,
}

impl AttemptSummary {
    /// How long it ran, when start and end are known.
    pub fn duration(&self) -> Option<Duration> {
        let (started, ended) = (self.started_at?, self.ended_at?);
        (started <= ended).then(|| ended.since(started))
    }
}

impl From<AttemptRecord> for AttemptSummary {
    fn from(a: AttemptRecord) -> Self {
        Self {
            attempt: a.attempt,
            worker: a.worker,
            started_at: a.started_at,
            ended_at: Some(a.ended_at),
            outcome: a.outcome,
            error: a.error,
        }
    }
}

impl TaskRecord {
    /// Every attempt known, oldest first: the [`attempt_log`](Self::attempt_log),
    /// then the current or last attempt from the record's own fields when
    /// it is not in the log already (a retried or reaped task's last
    /// attempt is; a requeued task's count starts again).
    ///
    /// ```
    /// use reliable_executor::{TaskId, TaskRecord, TaskState, Timestamp, attempt_log::{AttemptOutcome, AttemptRecord}};
    ///
    /// let t = |ms| Timestamp::from_millis(ms);
    /// let mut record = TaskRecord::new(TaskId::new("t1")?, "send", TaskState::Completed, b"{}".to_vec(), t(0), t(0));
    /// record.attempts = 2;
    /// record.started_at = Some(t(2_000));
    /// record.finished_at = Some(t(2_100));
    /// record.attempt_log.push(AttemptRecord::new(1, AttemptOutcome::Failed, t(1_500)));
    /// let all = record.all_attempts();
    /// assert_eq!(all.iter().map(|a| (a.attempt, a.outcome)).collect::<Vec<_>>(),
    ///     [(1, AttemptOutcome::Failed), (2, AttemptOutcome::Completed)]);
    /// assert_eq!(all[1].ended_at, Some(t(2_100)));
    /// # Ok::<(), reliable_executor::Error>(())
    /// ```
    pub fn all_attempts(&self) -> Vec<AttemptSummary> {
        let mut out: Vec<AttemptSummary> = self.attempt_log.iter().cloned().map(Into::into).collect();
        let logged = self
            .attempt_log
            .last()
            .is_some_and(|a| a.attempt == self.attempts && a.outcome != AttemptOutcome::Dead);
        if self.attempts == 0 || logged {
            return out;
        }
        let outcome = match self.state {
            TaskState::Running => AttemptOutcome::Running,
            TaskState::Completed => AttemptOutcome::Completed,
            TaskState::Cancelled => AttemptOutcome::Cancelled,
            TaskState::Failed | TaskState::Timeout | TaskState::Error => AttemptOutcome::Dead,
            // Waiting with an attempt not in the log: written before the
            // log existed, after a retry or a reap.
            TaskState::Created | TaskState::Pending => AttemptOutcome::Failed,
        };
        let error = match outcome {
            AttemptOutcome::Completed | AttemptOutcome::Running => None,
            _ => self.last_error.clone(),
        };
        out.push(AttemptSummary {
            attempt: self.attempts,
            worker: self.worker.clone(),
            started_at: self.started_at,
            ended_at: if self.state.is_terminal() { self.finished_at } else { None },
            outcome,
            error,
        });
        out
    }
}

/// `text` cut to at most [`MAX_ERROR_LEN`] bytes at a character boundary.
pub(crate) fn bounded_error(text: &str) -> String {
    let mut end = text.len().min(MAX_ERROR_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Appends `entry` to `log`, keeping the newest [`MAX_ATTEMPT_LOG`].
pub(crate) fn push_bounded(log: &mut Vec<AttemptRecord>, entry: AttemptRecord) {
    log.push(entry);
    if log.len() > MAX_ATTEMPT_LOG {
        log.drain(..log.len() - MAX_ATTEMPT_LOG);
    }
}

/// Reads an attempt log a store kept as JSON (the array of
/// [`AttemptRecord`]s serde writes), leniently: the log is a courtesy to
/// the operator, so one that does not parse (edited by hand, cut short)
/// never makes the task unreadable. An entry that does not parse is
/// skipped; a log that is not an array reads as empty; either is reported
/// once as a warning naming the task. Keeps the newest [`MAX_ATTEMPT_LOG`].
///
/// ```
/// use reliable_executor::{TaskId, attempt_log::AttemptOutcome, storage::decode_attempt_log};
///
/// let id = TaskId::new("t1")?;
/// let log = decode_attempt_log(&id, r#"[{"attempt":1,"ended_at":5,"outcome":"failed"}, 7]"#);
/// assert_eq!(log.len(), 1);
/// assert_eq!(log[0].outcome, AttemptOutcome::Failed);
/// assert!(decode_attempt_log(&id, "not json").is_empty());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
pub fn decode_attempt_log(id: &TaskId, json: &str) -> Vec<AttemptRecord> {
    let items = match serde_json::from_str::<Vec<serde_json::Value>>(json) {
        Ok(items) => items,
        Err(e) => {
            tracing::warn!(task = %id, error = %e, "the stored attempt log is not a JSON array; shown as empty");
            return Vec::new();
        }
    };
    let total = items.len();
    let mut log: Vec<AttemptRecord> =
        items.into_iter().filter_map(|v| serde_json::from_value::<AttemptRecord>(v).ok()).collect();
    if log.len() < total {
        tracing::warn!(task = %id, skipped = total - log.len(), "attempt log entries that do not parse were skipped");
    }
    if log.len() > MAX_ATTEMPT_LOG {
        log.drain(..log.len() - MAX_ATTEMPT_LOG);
    }
    log
}

/// [`decode_attempt_log`] of a SQL column as a driver reads it: NULL is an
/// empty log, and a column that does not read (a type edited by hand) is
/// an empty log and a warning, so the task stays readable.
///
/// ```
/// use reliable_executor::{TaskId, storage::attempt_log_from_column};
///
/// let id = TaskId::new("t1")?;
/// let read: Result<Option<String>, &str> = Ok(None);
/// assert!(attempt_log_from_column(&id, read).is_empty());
/// assert!(attempt_log_from_column::<&str>(&id, Err("mismatched types")).is_empty());
/// # Ok::<(), reliable_executor::Error>(())
/// ```
pub fn attempt_log_from_column<E: std::fmt::Display>(
    id: &TaskId,
    column: std::result::Result<Option<String>, E>,
) -> Vec<AttemptRecord> {
    match column {
        Ok(Some(json)) => decode_attempt_log(id, &json),
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::warn!(task = %id, error = %e, "the attempt log column does not read; shown as empty");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn record(state: TaskState, attempts: u32) -> TaskRecord {
        let mut r = TaskRecord::new(TaskId::generate(), "n", state, b"{}".to_vec(), t(0), t(0));
        r.attempts = attempts;
        r.started_at = (attempts > 0).then_some(t(100));
        r
    }

    #[test]
    fn the_story_adds_the_current_attempt_only_when_it_is_not_logged() {
        assert!(record(TaskState::Created, 0).all_attempts().is_empty(), "never claimed");
        let running = record(TaskState::Running, 1).all_attempts();
        assert_eq!(running.len(), 1);
        assert_eq!((running[0].outcome, running[0].ended_at), (AttemptOutcome::Running, None));

        let mut retried = record(TaskState::Pending, 2);
        retried.attempt_log = vec![
            AttemptRecord::new(1, AttemptOutcome::Failed, t(50)),
            AttemptRecord::new(2, AttemptOutcome::LeaseExpired, t(150)),
        ];
        let numbers: Vec<u32> = retried.all_attempts().iter().map(|a| a.attempt).collect();
        assert_eq!(numbers, [1, 2], "the waiting task's last attempt is the log's last entry");

        // Requeued after dying on attempt 1, then claimed again: attempt 1 twice.
        let mut requeued = record(TaskState::Running, 1);
        requeued.attempt_log = vec![AttemptRecord::new(1, AttemptOutcome::Dead, t(50))];
        let story = requeued.all_attempts();
        assert_eq!(
            story.iter().map(|a| (a.attempt, a.outcome)).collect::<Vec<_>>(),
            [(1, AttemptOutcome::Dead), (1, AttemptOutcome::Running)]
        );

        let mut dead = record(TaskState::Failed, 3);
        dead.finished_at = Some(t(300));
        dead.last_error = Some("boom".into());
        let last = dead.all_attempts().pop();
        assert_eq!(
            last.map(|a| (a.outcome, a.ended_at, a.duration(), a.error)),
            Some((AttemptOutcome::Dead, Some(t(300)), Some(Duration::from_millis(200)), Some("boom".into())))
        );
    }

    #[test]
    fn logs_are_bounded_and_decoded_leniently() {
        let id = TaskId::generate();
        let mut log = Vec::new();
        for n in 1..=25 {
            push_bounded(&mut log, AttemptRecord::new(n, AttemptOutcome::Failed, t(u64::from(n))));
        }
        assert_eq!(log.len(), MAX_ATTEMPT_LOG);
        assert_eq!(log.first().map(|a| a.attempt), Some(6), "the oldest are dropped");
        let json = serde_json::to_string(&log).unwrap_or_default();
        assert_eq!(decode_attempt_log(&id, &json), log, "round trip");
        for garbage in ["", "{}", "\"x\"", "[", "null", "[1,2]", "[{\"attempt\":\"one\"}]"] {
            assert!(decode_attempt_log(&id, garbage).is_empty(), "{garbage:?}");
        }
        let newer = r#"[{"attempt":4,"ended_at":9,"outcome":"exploded","extra":1}]"#;
        assert_eq!(decode_attempt_log(&id, newer).first().map(|a| a.outcome), Some(AttemptOutcome::Unknown));
        let long = "é".repeat(MAX_ERROR_LEN);
        let cut = bounded_error(&long);
        assert!(cut.len() <= MAX_ERROR_LEN && cut.len() >= MAX_ERROR_LEN - 1, "{}", cut.len());
    }
}
