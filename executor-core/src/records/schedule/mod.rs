//! Cron schedules: a task submitted once per tick of a cron expression, by
//! the namespace's leader, with an id made of the schedule's name and the
//! tick's instant, so every process and every leader after a failover
//! submits the same task for the same tick and the store keeps one.
//!
//! - [`Cron`]: an expression in a time zone, and its ticks.
//! - [`Schedule`]: what to submit and when; stored in the store, so every
//!   process sees the same set.
//! - [`Schedules`]: add, replace, pause, resume, remove and list them, from
//!   [`crate::Client::schedules`] (an executor derefs to its client).

mod cron;

use serde::{Deserialize, Serialize};

// The handle on schedules is the user's API (`api/schedules.rs`) and their
// firing the leader's runtime (`runtime/scheduler.rs`); this module shows the
// handle beside the records.
pub use crate::api::schedules::{IntoSchedule, ScheduleBuilder, ScheduleInfo, Schedules};
pub use cron::Cron;

use crate::{Error, Result, TaskId, Timestamp, id::validate_key};

/// The longest schedule name: room for `@` and the tick's instant in a
/// task id of at most [`crate::id::MAX_ID_LEN`] bytes.
pub const MAX_SCHEDULE_NAME_LEN: usize = 100;

/// The largest `max` of [`Misfire::All`]: the most ticks the leader fires
/// for one schedule in one round.
pub const MAX_MISFIRE_ALL: u32 = 1_000;

/// What the leader does with ticks that passed while no leader was alive
/// (every process down, the store unreachable) or the schedule was late.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "policy")]
#[non_exhaustive]
pub enum Misfire {
    /// Fire the latest missed tick once, skip the earlier ones (the default,
    /// as a person would: "the 02:00 report did not run, run it now, once").
    #[default]
    Skip,
    /// Fire every missed tick, oldest first, but at most `max` of them (the
    /// latest ones) after one outage.
    All {
        /// The most missed ticks fired after one outage, 1 to
        /// [`MAX_MISFIRE_ALL`].
        max: u32,
    },
    /// Fire no missed tick: a tick fires only while it is on time (found
    /// within the executor's `misfire_grace` of its instant).
    None,
}

/// What the leader does at a tick while the task of the schedule's previous
/// tick is still waiting or running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Overlap {
    /// Submit anyway: runs of two ticks may overlap (the default).
    #[default]
    Allow,
    /// Skip the tick: never a second run while the first waits or runs.
    Skip,
}

/// A cron schedule: submit a task named `task` with `payload` at every tick
/// of `cron` in `timezone`. Stored in the store under `name`, unique in its
/// namespace; a schedule of a `#[reliable_task(cron = ..)]` handler is named
/// after the task.
///
/// ```
/// use reliable_executor::schedule::{Misfire, Overlap, Schedule};
///
/// let s = Schedule::new("nightly_report", "build_report", "0 0 2 * * *", "Europe/Berlin")?
///     .payload_json(r#"{"kind":"daily"}"#)?
///     .overlap(Overlap::Skip)
///     .misfire(Misfire::All { max: 3 });
/// assert_eq!(s.tick_id(reliable_executor::Timestamp::from_millis(1_764_550_800_000))?.as_str(),
///            "nightly_report@2025-12-01T01:00:00Z");
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Schedule {
    /// The schedule's name, unique in its namespace.
    pub name: String,
    /// The task name each tick submits.
    pub task: String,
    /// The cron expression: 5 fields, or 6 with seconds first.
    pub cron: String,
    /// An IANA time zone (`Europe/Berlin`), or `UTC`.
    pub timezone: String,
    /// The task's payload, as JSON text.
    pub payload: String,
    /// Missed ticks.
    #[serde(default)]
    pub misfire: Misfire,
    /// Ticks while the previous run is not finished.
    #[serde(default)]
    pub overlap: Overlap,
}

impl Schedule {
    /// A schedule of `task` named `name`, with payload `null`, misfire
    /// [`Misfire::Skip`] and overlap [`Overlap::Allow`].
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad name, expression or time zone.
    pub fn new(
        name: impl Into<String>,
        task: impl Into<String>,
        cron: impl Into<String>,
        timezone: impl Into<String>,
    ) -> Result<Self> {
        let s = Self {
            name: name.into(),
            task: task.into(),
            cron: cron.into(),
            timezone: timezone.into(),
            payload: "null".to_owned(),
            misfire: Misfire::default(),
            overlap: Overlap::default(),
        };
        s.validate()?;
        Ok(s)
    }

    /// The same schedule with `payload` (JSON text) as each task's payload.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `payload` is not JSON.
    pub fn payload_json(mut self, payload: impl Into<String>) -> Result<Self> {
        let payload = payload.into();
        check_json(&payload)?;
        self.payload = payload;
        Ok(self)
    }

    /// The same schedule with misfire policy `misfire`.
    pub fn misfire(mut self, misfire: Misfire) -> Self {
        self.misfire = misfire;
        self
    }

    /// The same schedule with overlap policy `overlap`.
    pub fn overlap(mut self, overlap: Overlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// The parsed expression in its zone.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad expression or time zone.
    pub fn parsed(&self) -> Result<Cron> {
        Cron::new(&self.cron, &self.timezone)
    }

    /// Checks every field: the name (1 to [`MAX_SCHEDULE_NAME_LEN`] bytes, no
    /// whitespace, control characters or `@`), the task name, the
    /// expression and zone, the payload (JSON), `Misfire::All` at least 1.
    ///
    /// # Errors
    /// [`Error::Invalid`], saying which field and why.
    pub fn validate(&self) -> Result<()> {
        validate_key("schedule name", &self.name, MAX_SCHEDULE_NAME_LEN)?;
        if self.name.contains('@') {
            // `@` separates the name from the tick in the tasks' ids.
            return Err(Error::invalid("schedule name", format!("`{}` contains '@'", self.name)));
        }
        validate_key("schedule task", &self.task, crate::id::MAX_ID_LEN)?;
        self.parsed()?;
        check_json(&self.payload)?;
        if let Misfire::All { max } = self.misfire
            && !(1..=MAX_MISFIRE_ALL).contains(&max)
        {
            return Err(Error::invalid(
                "schedule misfire",
                format!("`All {{ max }}` takes 1 to {MAX_MISFIRE_ALL}, got {max}"),
            ));
        }
        Ok(())
    }

    /// The id of the task this schedule submits for the tick at `tick`:
    /// `name@` and the instant in RFC 3339, UTC (`daily@2026-12-01T01:00:00Z`).
    /// Every process and leader derives the same id, so a tick submitted
    /// twice is stored once.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the name makes the id too long.
    pub fn tick_id(&self, tick: Timestamp) -> Result<TaskId> {
        TaskId::new(format!("{}@{}", self.name, cron::rfc3339(tick)))
    }
}

/// Refuses a payload that is not JSON text.
fn check_json(payload: &str) -> Result<()> {
    serde_json::from_str::<serde::de::IgnoredAny>(payload)
        .map(drop)
        .map_err(|e| Error::invalid("schedule payload", format!("not JSON: {e}")))
}

/// A schedule as the store keeps it: the definition, whether it is paused,
/// and how far the leader has got.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleEntry {
    /// The definition.
    pub schedule: Schedule,
    /// Paused: ticks pass without a task.
    pub paused: bool,
    /// Every tick at or before this instant is handled (fired or skipped);
    /// set to the store's now when the schedule is first stored.
    pub cursor: Timestamp,
    /// The fencing token of the leader that last moved the cursor.
    pub fence: u64,
    /// The task of the last fired tick.
    pub last_task: Option<TaskId>,
}

impl ScheduleEntry {
    /// An entry of `schedule`, not paused, handled up to `cursor`.
    pub fn new(schedule: Schedule, cursor: Timestamp) -> Self {
        Self { schedule, paused: false, cursor, fence: 0, last_task: None }
    }
}

/// A move of a schedule's cursor by the leader, made only if the stored
/// cursor is still `from` and no leader with a larger token moved it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Advance {
    /// The cursor the leader read.
    pub from: Timestamp,
    /// The new cursor: the tick just handled.
    pub to: Timestamp,
    /// The leader's fencing token.
    pub token: u64,
    /// The task submitted for `to`; `None` keeps the stored one (a skipped
    /// tick).
    pub task: Option<TaskId>,
}

impl Advance {
    /// A move from `from` to `to` under leadership token `token`.
    pub fn new(from: Timestamp, to: Timestamp, token: u64, task: Option<TaskId>) -> Self {
        Self { from, to, token, task }
    }

    /// Whether `entry` accepts this move: its cursor is `from` and its fence
    /// is not newer than `token`. Stores apply this rule atomically.
    pub fn applies_to(&self, entry: &ScheduleEntry) -> bool {
        entry.cursor == self.from && entry.fence <= self.token
    }

    /// Applies the move to `entry` (after [`Advance::applies_to`]).
    pub fn apply(&self, entry: &mut ScheduleEntry) {
        entry.cursor = self.to;
        entry.fence = self.token;
        if let Some(task) = &self.task {
            entry.last_task = Some(task.clone());
        }
    }
}
