//! The user's handle on a namespace's schedules, and the typed builder the
//! `#[reliable_task]` helpers return from `name::every(..)`.

use std::{fmt, marker::PhantomData};

use serde::Serialize;

use crate::{
    Client, Error, Result, TaskId, TaskState, Timestamp,
    schedule::{Misfire, Overlap, Schedule, ScheduleEntry},
    storage::ScheduleStore,
};

/// A schedule as [`Schedules::list`] shows it: what the store keeps, when
/// it fires next, and the state of the task of its last tick.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleInfo {
    /// The definition.
    pub schedule: Schedule,
    /// Paused: ticks pass without a task.
    pub paused: bool,
    /// Every tick at or before this instant is handled.
    pub last_tick: Timestamp,
    /// The next tick after `last_tick` (in the past while no leader has
    /// fired it yet); `None` if the expression never fires again.
    pub next_fire: Option<Timestamp>,
    /// The task of the last fired tick.
    pub last_task: Option<TaskId>,
    /// Its state, when it is still stored.
    pub last_state: Option<TaskState>,
}

/// Adds, replaces, pauses, resumes, removes and lists the cron schedules of
/// a namespace. They live in the store, so every process sees the same set;
/// the namespace's leader fires them. From [`Client::schedules`] (an
/// executor derefs to its client).
///
/// ```
/// use reliable_executor::{Client, MemoryStorage, Namespace, schedule::{Overlap, Schedule}};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> reliable_executor::Result<()> {
/// let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("app")?);
/// let schedules = client.schedules();
/// schedules.put(Schedule::new("refresh", "refresh_cache", "*/5 * * * *", "UTC")?.overlap(Overlap::Skip)).await?;
/// assert!(schedules.pause("refresh").await?);
/// let listed = schedules.list().await?;
/// assert_eq!((listed[0].schedule.name.as_str(), listed[0].paused), ("refresh", true));
/// assert!(schedules.remove("refresh").await?);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Schedules<S> {
    client: Client<S>,
}

impl<S: ScheduleStore> fmt::Debug for Schedules<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schedules").field("namespace", self.client.namespace()).finish()
    }
}

impl<S: ScheduleStore> Schedules<S> {
    pub(crate) fn new(client: Client<S>) -> Self {
        Self { client }
    }

    /// Adds a schedule, or replaces the definition of the one with its name
    /// (keeping whether it is paused and how far it has fired). Takes a
    /// [`Schedule`] or the builder of `name::every(..)`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad schedule; [`Error::UnknownTask`] when the
    /// client checks names and knows no such task;
    /// [`Error::PayloadTooLarge`]; store failures; [`Error::Unsupported`]
    /// from a store chosen at run time whose choice keeps none.
    pub async fn put(&self, schedule: impl IntoSchedule) -> Result<()> {
        let schedule = schedule.into_schedule()?;
        schedule.validate()?;
        if let Some(registry) = self.client.registry()
            && registry.get(&schedule.task).is_none()
        {
            return Err(Error::UnknownTask(schedule.task));
        }
        let limit = self.client.payload_limit().await?;
        if schedule.payload.len() > limit {
            return Err(Error::PayloadTooLarge { size: schedule.payload.len(), limit });
        }
        self.client.storage().put_schedule(self.client.namespace(), &schedule).await
    }

    /// Every schedule, by name, with its next fire time and the state of
    /// its last task (one read per schedule that fired).
    ///
    /// # Errors
    /// Store failures; [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn list(&self) -> Result<Vec<ScheduleInfo>> {
        let entries = self.client.storage().schedules(self.client.namespace()).await?;
        let mut out = Vec::with_capacity(entries.len());
        for entry in entries {
            out.push(self.info(entry).await?);
        }
        Ok(out)
    }

    /// Schedule `name`, if it exists.
    ///
    /// # Errors
    /// As [`Schedules::list`].
    pub async fn get(&self, name: &str) -> Result<Option<ScheduleInfo>> {
        let entries = self.client.storage().schedules(self.client.namespace()).await?;
        match entries.into_iter().find(|e| e.schedule.name == name) {
            Some(entry) => Ok(Some(self.info(entry).await?)),
            None => Ok(None),
        }
    }

    async fn info(&self, entry: ScheduleEntry) -> Result<ScheduleInfo> {
        let next_fire = entry.schedule.parsed().ok().and_then(|c| c.next_after(entry.cursor));
        let last_state = match &entry.last_task {
            Some(id) => self.client.status(id).await?.map(|r| r.state),
            None => None,
        };
        Ok(ScheduleInfo {
            schedule: entry.schedule,
            paused: entry.paused,
            last_tick: entry.cursor,
            next_fire,
            last_task: entry.last_task,
            last_state,
        })
    }

    /// Pauses schedule `name`: its ticks pass without a task, and resuming
    /// fires none of them. Whether it exists.
    ///
    /// # Errors
    /// Store failures; [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn pause(&self, name: &str) -> Result<bool> {
        self.client.storage().pause_schedule(self.client.namespace(), name, true).await
    }

    /// Resumes schedule `name` from its next tick. Whether it exists.
    ///
    /// # Errors
    /// Store failures; [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn resume(&self, name: &str) -> Result<bool> {
        self.client.storage().pause_schedule(self.client.namespace(), name, false).await
    }

    /// Removes schedule `name` (the tasks it submitted stay). Whether it
    /// existed. A `#[reliable_task(cron = ..)]` schedule comes back when a
    /// process with that attribute starts.
    ///
    /// # Errors
    /// Store failures; [`Error::Unsupported`] from a store chosen at run time whose choice lacks the ability.
    pub async fn remove(&self, name: &str) -> Result<bool> {
        self.client.storage().remove_schedule(self.client.namespace(), name).await
    }
}

/// A schedule of one task, typed by its payload: what `name::every(cron)`
/// of a `#[reliable_task]` returns. Give it to [`Schedules::put`].
///
/// ```
/// use reliable_executor::schedule::{IntoSchedule, Overlap, ScheduleBuilder};
///
/// let schedule = ScheduleBuilder::<u64>::new("sync_crm", "*/5 * * * *")
///     .name("sync_crm_eu")
///     .timezone("Europe/Berlin")
///     .payload(7)
///     .overlap(Overlap::Skip)
///     .into_schedule()?;
/// assert_eq!((schedule.name.as_str(), schedule.payload.as_str()), ("sync_crm_eu", "7"));
/// # Ok::<(), reliable_executor::Error>(())
/// ```
#[must_use = "a schedule does nothing until given to `schedules().put(..)`"]
pub struct ScheduleBuilder<P> {
    task: String,
    name: Option<String>,
    cron: String,
    timezone: String,
    payload: Option<Result<String>>,
    misfire: Misfire,
    overlap: Overlap,
    payload_type: PhantomData<fn(P)>,
}

impl<P> fmt::Debug for ScheduleBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduleBuilder")
            .field("task", &self.task)
            .field("name", &self.name)
            .field("cron", &self.cron)
            .field("timezone", &self.timezone)
            .finish_non_exhaustive()
    }
}

impl<P: Serialize> ScheduleBuilder<P> {
    /// A schedule of task `task` at every tick of `cron`, in UTC, named
    /// after the task. A task with a payload needs [`ScheduleBuilder::payload`].
    pub fn new(task: impl Into<String>, cron: impl Into<String>) -> Self {
        Self {
            task: task.into(),
            name: None,
            cron: cron.into(),
            timezone: "UTC".to_owned(),
            payload: None,
            misfire: Misfire::default(),
            overlap: Overlap::default(),
            payload_type: PhantomData,
        }
    }

    /// The schedule's name (default: the task's name), for several
    /// schedules of one task.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The time zone of the expression (default `UTC`).
    pub fn timezone(mut self, timezone: impl Into<String>) -> Self {
        self.timezone = timezone.into();
        self
    }

    /// The payload of every tick's task.
    pub fn payload(mut self, payload: P) -> Self {
        self.payload = Some(serde_json::to_string(&payload).map_err(Error::Encode));
        self
    }

    /// What to do with missed ticks (default [`Misfire::Skip`]).
    pub fn misfire(mut self, misfire: Misfire) -> Self {
        self.misfire = misfire;
        self
    }

    /// What to do at a tick while the last run is unfinished (default
    /// [`Overlap::Allow`]).
    pub fn overlap(mut self, overlap: Overlap) -> Self {
        self.overlap = overlap;
        self
    }
}

/// What [`Schedules::put`] takes: a [`Schedule`], or the builder of
/// `name::every(..)`, whose checks run here.
pub trait IntoSchedule {
    /// The schedule.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad schedule; [`Error::Encode`] for a payload
    /// that does not serialize.
    fn into_schedule(self) -> Result<Schedule>;
}

impl IntoSchedule for Schedule {
    fn into_schedule(self) -> Result<Schedule> {
        Ok(self)
    }
}

impl<P> IntoSchedule for ScheduleBuilder<P> {
    fn into_schedule(self) -> Result<Schedule> {
        let b = self;
        let payload = match b.payload {
            Some(p) => p?,
            None => {
                return Err(Error::invalid(
                    "schedule payload",
                    format!("task `{}` takes a payload: give it with `.payload(..)`", b.task),
                ));
            }
        };
        let name = b.name.unwrap_or_else(|| b.task.clone());
        Ok(Schedule::new(name, b.task, b.cron, b.timezone)?
            .payload_json(payload)?
            .misfire(b.misfire)
            .overlap(b.overlap))
    }
}
