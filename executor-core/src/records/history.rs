//! Throughput history: how many attempts of each task name succeeded and
//! failed in each minute, kept in the store so every process and a restart
//! see the same history. [`Client::history`](crate::Client::history) answers
//! [`HistoryBucket`]s; an executor adds [`HistoryCount`]s.
//!
//! Executors count finished attempts in memory and add them with one
//! [`HistoryStore::add_history`](crate::storage::HistoryStore::add_history) call every
//! `history_interval`; the store puts them in the bucket of its own current
//! minute. The leader trims buckets older than `history_keep`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Error, Result, Timestamp, id::MAX_ID_LEN};

/// One minute, the width of a history bucket.
pub const HISTORY_MINUTE: Duration = Duration::from_secs(60);

/// The largest count one [`HistoryCount`] may carry: what a signed 64-bit
/// store column (`BIGINT`, a Redis integer) holds.
pub const MAX_HISTORY_COUNT: u64 = i64::MAX as u64;

/// Attempts of one task name that ended since the last flush, added to the
/// store's current minute by
/// [`HistoryStore::add_history`](crate::storage::HistoryStore::add_history).
///
/// ```
/// use reliable_executor::storage::HistoryCount;
///
/// let count = HistoryCount::new("send_mail", 12, 1);
/// assert_eq!((count.name.as_str(), count.succeeded, count.failed), ("send_mail", 12, 1));
/// count.validate()?;
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryCount {
    /// The task name, as given (1 to [`MAX_ID_LEN`] bytes).
    pub name: String,
    /// Attempts whose handler returned `Ok`.
    pub succeeded: u64,
    /// Attempts that ended any other way: an error, a panic, a timeout,
    /// whether retried or dead-lettered.
    pub failed: u64,
}

impl HistoryCount {
    /// `succeeded` and `failed` attempts of task `name`.
    pub fn new(name: impl Into<String>, succeeded: u64, failed: u64) -> Self {
        Self { name: name.into(), succeeded, failed }
    }

    /// Checks what every store checks before it adds: a name of 1 to
    /// [`MAX_ID_LEN`] bytes without a NUL (which PostgreSQL text cannot
    /// hold) and counts of at most [`MAX_HISTORY_COUNT`].
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the problem.
    pub fn validate(&self) -> Result<()> {
        if self.name.is_empty() || self.name.len() > MAX_ID_LEN {
            return Err(Error::invalid(
                "history name",
                format!("{} bytes is outside 1..={MAX_ID_LEN}", self.name.len()),
            ));
        }
        if self.name.contains('\0') {
            return Err(Error::invalid("history name", "must not contain a NUL byte"));
        }
        if self.succeeded > MAX_HISTORY_COUNT || self.failed > MAX_HISTORY_COUNT {
            return Err(Error::invalid("history count", format!("must be at most {MAX_HISTORY_COUNT}")));
        }
        Ok(())
    }

    /// Whether there is nothing to add.
    pub fn is_empty(&self) -> bool {
        self.succeeded == 0 && self.failed == 0
    }
}

/// One minute of one task name's history, as
/// [`HistoryStore::history`](crate::storage::HistoryStore::history) answers it.
///
/// ```
/// use reliable_executor::{Timestamp, storage::HistoryBucket};
///
/// let b = HistoryBucket::new(Timestamp::from_millis(120_000), "send_mail", 3, 0);
/// assert_eq!(b.minute, Timestamp::from_millis(120_000));
/// assert_eq!(b.total(), 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryBucket {
    /// The start of the minute, on the store's clock (a multiple of 60,000 ms).
    pub minute: Timestamp,
    /// The task name.
    pub name: String,
    /// Attempts whose handler returned `Ok` in this minute.
    pub succeeded: u64,
    /// Attempts that ended any other way in this minute.
    pub failed: u64,
}

impl HistoryBucket {
    /// `succeeded` and `failed` attempts of `name` in the minute starting at `minute`.
    pub fn new(minute: Timestamp, name: impl Into<String>, succeeded: u64, failed: u64) -> Self {
        Self { minute, name: name.into(), succeeded, failed }
    }

    /// Succeeded plus failed, saturating.
    pub fn total(&self) -> u64 {
        self.succeeded.saturating_add(self.failed)
    }

    /// A bucket from a SQL row's columns (epoch-ms minute, signed counts),
    /// or why the row is left out: a minute that is not the start of one,
    /// a negative count (a row edited by hand). The SQL drivers' one check.
    ///
    /// ```
    /// use reliable_executor::{Timestamp, history::HistoryBucket};
    ///
    /// let b = HistoryBucket::from_columns(120_000, "mail".into(), 3, 1)?;
    /// assert_eq!((b.minute, b.succeeded, b.failed), (Timestamp::from_millis(120_000), 3, 1));
    /// assert!(HistoryBucket::from_columns(12_345, "mail".into(), 3, 1).is_err());
    /// assert!(HistoryBucket::from_columns(120_000, "mail".into(), -5, 1).is_err());
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    /// The reason, naming the column.
    pub fn from_columns(
        minute: i64,
        name: String,
        succeeded: i64,
        failed: i64,
    ) -> std::result::Result<Self, String> {
        let at = u64::try_from(minute)
            .ok()
            .map(Timestamp::from_millis)
            .filter(|m| *m == minute_of(*m) && *m <= Timestamp::MAX)
            .ok_or_else(|| format!("column `minute` is not the start of a minute: {minute}"))?;
        let count = |column: &str, v: i64| {
            u64::try_from(v).map_err(|_| format!("column `{column}` is negative: {v}"))
        };
        Ok(Self::new(at, name, count("succeeded", succeeded)?, count("failed", failed)?))
    }
}

/// The start of the minute `t` falls in.
///
/// ```
/// use reliable_executor::{Timestamp, storage::minute_of};
///
/// assert_eq!(minute_of(Timestamp::from_millis(125_999)), Timestamp::from_millis(120_000));
/// ```
pub fn minute_of(t: Timestamp) -> Timestamp {
    let ms = t.as_millis();
    Timestamp::from_millis(ms - ms % 60_000)
}

/// Checks every count of an `add_history` call and drops the empty ones:
/// the one entry check of every store.
///
/// # Errors
/// [`Error::Invalid`] for the first count that [`HistoryCount::validate`] refuses.
pub fn check_history(counts: &[HistoryCount]) -> Result<Vec<&HistoryCount>> {
    let mut out = Vec::with_capacity(counts.len());
    for c in counts {
        c.validate()?;
        if !c.is_empty() {
            out.push(c);
        }
    }
    Ok(out)
}
