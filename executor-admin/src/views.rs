//! The JSON shapes of the admin API (requests and answers), with their
//! OpenAPI schemas.

use std::collections::BTreeMap;

use executor_core::{
    TaskRecord, TaskState, Timestamp, attempt_log::AttemptSummary, id::MAX_ID_LEN, query::Unreadable,
    queue::QueueInfo, schedule::ScheduleInfo, storage::Leadership,
};
use serde::{Deserialize, Serialize};
use utoipa::{
    IntoParams, ToSchema,
    openapi::{
        ObjectBuilder, Required, Type,
        path::{Parameter, ParameterBuilder, ParameterIn},
    },
};

use crate::limits::QueueLimitsView;

/// `POST /api/tasks`: submit a task by name.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// Handler name, as in `#[reliable_task(name = ...)]`.
    #[schema(
        min_length = 1,
        max_length = 191,
        pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$"
    )]
    pub name: String,
    /// The handler's parameter as JSON (`null` for a handler without one).
    #[serde(default)]
    pub payload: serde_json::Value,
    /// A business id; generated (UUID v7) when absent. 1 to 191 bytes of
    /// UTF-8 without whitespace or control characters.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 191,
        pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$"
    )]
    pub id: Option<String>,
    /// Due after this many milliseconds instead of at once.
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// A duplicate `id` returns the existing task instead of `409 duplicate_id`.
    #[serde(default)]
    pub idempotent: bool,
}

/// Answer to a submit.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct SubmitResponse {
    /// The task's id.
    pub id: String,
    /// `created`, or `existing` for an idempotent repeat.
    pub outcome: String,
}

/// A task as the API shows it. Times are epoch milliseconds of the store's
/// clock. The record's own fields (`started_at`, `worker`, `last_error`)
/// describe its current or last attempt; `GET /api/tasks/{id}` adds
/// `all_attempts`, every attempt the store kept.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct TaskView {
    /// The id.
    pub id: String,
    /// Handler name.
    pub name: String,
    /// `CREATED`, `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `TIMEOUT`, `ERROR` or `CANCELLED`.
    pub state: String,
    /// Whether the task is in the dead letter (`FAILED`, `TIMEOUT`, `ERROR`).
    pub dead_letter: bool,
    /// The payload: its JSON, or a string when it is not JSON.
    pub payload: serde_json::Value,
    /// Attempts started so far (including a running one).
    pub attempts: u32,
    /// Attempts allowed in all.
    pub max_attempts: u32,
    /// Lease fence: grows with every claim and reap.
    pub fence: u64,
    /// Submitted at.
    pub created_at: u64,
    /// May next start at.
    pub due_at: u64,
    /// Current or last attempt started at.
    pub started_at: Option<u64>,
    /// Reached a terminal state at.
    pub finished_at: Option<u64>,
    /// Ends `TIMEOUT` past this (`created_at + max_duration`).
    pub deadline: Option<u64>,
    /// Per-attempt timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Reason of the last failure.
    pub last_error: Option<String>,
    /// Worker holding the lease while `RUNNING`.
    pub worker: Option<String>,
    /// Lease expiry while `RUNNING`.
    pub lease_until: Option<u64>,
    /// A cancel was asked while it ran.
    pub cancel_requested: bool,
    /// Debounce key, if submitted with one.
    pub debounce_key: Option<String>,
    /// The queue it waits in (`default` unless its handler or submit named another).
    pub queue: String,
    /// Its priority within the queue, 0 to 9, higher claimed first.
    #[schema(minimum = 0, maximum = 9)]
    pub priority: u8,
    /// Every attempt the store kept, oldest first: the earlier attempts of
    /// the attempt log (at most 20, the newest: those retried, reaped, or
    /// dead-lettered before a requeue), then the current or last one. Only
    /// in `GET /api/tasks/{id}`; pages of `GET /api/tasks` leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_attempts: Option<Vec<AttemptView>>,
}

/// One attempt of a task: see [`TaskView::all_attempts`]. Times are epoch
/// milliseconds of the store's clock.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct AttemptView {
    /// Its number, from 1 (a requeue starts the count again).
    pub attempt: u32,
    /// The worker that ran it, when the store still knows it (a finished
    /// attempt's worker is kept only in the attempt log).
    pub worker: Option<String>,
    /// Claimed at.
    pub started_at: Option<u64>,
    /// Ended at; `null` while it runs.
    pub ended_at: Option<u64>,
    /// `ended_at - started_at`, when both are known.
    pub duration_ms: Option<u64>,
    /// How it ended.
    #[schema(value_type = String, example = "failed")]
    #[schema(pattern = "^(failed|lease_expired|dead|running|completed|cancelled|unknown)$")]
    pub outcome: String,
    /// Why it failed.
    pub error: Option<String>,
}

impl From<AttemptSummary> for AttemptView {
    fn from(a: AttemptSummary) -> Self {
        let duration_ms = a.duration().map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self {
            attempt: a.attempt,
            worker: a.worker.map(|w| w.as_str().to_owned()),
            started_at: a.started_at.map(|t| t.as_millis()),
            ended_at: a.ended_at.map(|t| t.as_millis()),
            duration_ms,
            outcome: a.outcome.as_str().to_owned(),
            error: a.error,
        }
    }
}

impl TaskView {
    /// The view of one task, with every attempt ([`TaskView::all_attempts`]).
    pub fn with_attempts(record: TaskRecord) -> Self {
        let attempts = record.all_attempts().into_iter().map(AttemptView::from).collect();
        let mut view = Self::from(record);
        view.all_attempts = Some(attempts);
        view
    }
}

impl From<TaskRecord> for TaskView {
    fn from(t: TaskRecord) -> Self {
        let payload = serde_json::from_slice(&t.payload)
            .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(&t.payload).into_owned()));
        Self {
            id: t.id.into_string(),
            name: t.name,
            state: t.state.as_str().to_owned(),
            dead_letter: t.state.is_dead_letter(),
            payload,
            attempts: t.attempts,
            max_attempts: t.max_attempts,
            fence: t.fence,
            created_at: t.created_at.as_millis(),
            due_at: t.due_at.as_millis(),
            started_at: t.started_at.map(|t| t.as_millis()),
            finished_at: t.finished_at.map(|t| t.as_millis()),
            deadline: t.deadline.map(|t| t.as_millis()),
            timeout_ms: t.timeout.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            last_error: t.last_error,
            worker: t.worker.map(|w| w.as_str().to_owned()),
            lease_until: t.lease_until.map(|t| t.as_millis()),
            cancel_requested: t.cancel_requested,
            debounce_key: t.debounce_key,
            queue: t.queue.into(),
            priority: t.priority,
            all_attempts: None,
        }
    }
}

/// `GET /api/tasks` query.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ListParams {
    /// The state to list (case-insensitive).
    pub(crate) state: String,
    /// `next` of the previous page.
    pub(crate) cursor: Option<String>,
    /// Page size, 1 to 1000 (default 50).
    pub(crate) limit: Option<usize>,
    /// Only tasks of this name.
    pub(crate) name: Option<String>,
}

// Written out rather than derived: the derive drops `required` and the
// description of a parameter whose schema is given by a function, and the
// `state` schema lists the states from `TaskState::ALL`.
impl IntoParams for ListParams {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let query = |name: &str, required: Required, description: &str, schema: ObjectBuilder| {
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .required(required)
                .description(Some(description))
                .schema(Some(schema.build()))
                .build()
        };
        vec![
            query(
                "state",
                Required::True,
                "The state to list (case-insensitive).",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(TaskState::ALL.iter().map(|s| s.as_str()))),
            ),
            query(
                "cursor",
                Required::False,
                "`next` of the previous page.",
                ObjectBuilder::new().schema_type(Type::String),
            ),
            query(
                "limit",
                Required::False,
                "Page size, 1 to 1000 (default 50).",
                ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).maximum(Some(1000)),
            ),
            query(
                "name",
                Required::False,
                "Only tasks of this name (the handler name they were submitted to). Pages may come \
                 back short, even empty with a `next`, on Redis, which checks names as it walks.",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .min_length(Some(1))
                    .max_length(Some(MAX_ID_LEN)),
            ),
        ]
    }
}

/// One page of tasks.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct PageView {
    /// The tasks.
    pub tasks: Vec<TaskView>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub next: Option<String>,
    /// Records in this page's range that do not parse (edited by hand,
    /// written by a newer version): skipped so the rest of the page reads.
    /// `DELETE /api/tasks/{id}` removes one.
    pub unreadable: Vec<UnreadableView>,
}

/// A stored record that does not parse, skipped by a list.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
pub struct UnreadableView {
    /// The task's id as stored (it may itself be what is wrong, and then
    /// not a valid id for the other routes).
    pub id: String,
    /// The state it was listed under.
    pub state: String,
    /// What did not parse.
    pub reason: String,
}

impl UnreadableView {
    pub(crate) fn new(state: TaskState, record: Unreadable) -> Self {
        Self { id: record.id, state: state.as_str().to_owned(), reason: record.reason }
    }
}

/// Counts of tasks by state.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct CountsView {
    /// Every state, zeros included.
    pub counts: BTreeMap<String, u64>,
    /// `FAILED + TIMEOUT + ERROR`.
    pub dead_letter: u64,
    /// All tasks.
    pub total: u64,
}

/// Answer to a cancel.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct CancelResponse {
    /// The task.
    pub id: String,
    /// `cancelled` (it was waiting) or `requested` (it runs; its worker is told).
    pub outcome: String,
}

/// Answer to a requeue of one task.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct RequeueResponse {
    /// The task.
    pub id: String,
    /// Always `PENDING`, due now.
    pub state: String,
}

/// Answer to a "run now" of one waiting task.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct RunNowResponse {
    /// The task.
    pub id: String,
    /// `CREATED` or `PENDING`, or where it went since (a worker may have
    /// claimed it already: `RUNNING`, or even finished).
    pub state: String,
    /// Its due time afterwards, ms since the epoch on the store's clock: at
    /// or before the store's now.
    pub due_at: u64,
}

/// Answer to a delete.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct DeleteResponse {
    /// The task.
    pub id: String,
    /// Always `true`: a task that did not exist answers `404 not_found`.
    pub deleted: bool,
}

/// `POST /api/dead-letter/requeue` query.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RequeueAllParams {
    /// Requeue at most this many (default 1000, at most 10000); call again
    /// while `more` is true.
    #[param(minimum = 1, maximum = 10000)]
    pub(crate) limit: Option<usize>,
}

/// Answer to a requeue of the dead letter.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct RequeueAllResponse {
    /// Tasks moved back to `PENDING`.
    pub requeued: u64,
    /// Tasks that could not be requeued (e.g. trimmed meanwhile, or the
    /// store refused), with why; the others were still requeued.
    pub errors: Vec<RequeueFailure>,
    /// Dead-lettered records that do not parse, so cannot be requeued:
    /// inspect them in the store or delete them.
    pub unreadable: Vec<UnreadableView>,
    /// The limit was reached, or the walk was interrupted, before the dead
    /// letter was empty: call again.
    pub more: bool,
    /// Why the walk stopped early when the store kept failing (three
    /// requeues in a row, or a page that could not be read after some
    /// tasks were requeued); `null` when it ran to its end. What is above
    /// was done; nothing after it was tried.
    pub interrupted: Option<crate::ErrorBody>,
}

/// One task a bulk requeue skipped.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct RequeueFailure {
    /// The task.
    pub id: String,
    /// The error code, as in [`crate::ErrorBody`].
    pub code: String,
    /// Why.
    pub message: String,
}

/// Who leads and who is asking.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct InfoView {
    /// The namespace.
    pub namespace: String,
    /// The current leader of housekeeping, if any.
    pub leader: Option<LeaderView>,
    /// This process as a worker; `null` for a producer-only client.
    pub worker: Option<WorkerView>,
    /// Every worker that announced itself recently (each executor does so
    /// every `counts_interval`), with the handler names it runs.
    pub workers: Vec<AnnouncedView>,
    /// Distinct handler sets among `workers`: above 1 while they differ (a
    /// rolling deploy, or two services sharing the namespace by mistake).
    pub handler_sets: usize,
}

/// A worker as it last announced itself.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct AnnouncedView {
    /// Its worker id.
    pub id: String,
    /// The handler names it runs, sorted.
    pub handlers: Vec<String>,
    /// When the announcement lapses unless renewed (ms since the epoch,
    /// store clock).
    pub until_ms: u64,
}

/// A term of leadership.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct LeaderView {
    /// The leading worker.
    pub worker: String,
    /// Fencing token of the term.
    pub token: u64,
    /// Term ends at (epoch ms) unless renewed.
    pub until: u64,
}

impl From<Leadership> for LeaderView {
    fn from(l: Leadership) -> Self {
        Self { worker: l.worker.as_str().to_owned(), token: l.token, until: l.until.as_millis() }
    }
}

/// This process as a worker.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct WorkerView {
    /// Its worker id (the owner of its leases).
    pub id: String,
    /// The handler names it runs.
    pub handlers: Vec<String>,
    /// Whether it is the leader now.
    pub is_leader: bool,
}

/// A cron schedule as the API shows it. Times are epoch milliseconds of
/// the store's clock.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct ScheduleView {
    /// The schedule's name, unique in its namespace.
    pub name: String,
    /// The task name each tick submits.
    pub task: String,
    /// The cron expression: 5 fields, or 6 with seconds first.
    pub cron: String,
    /// The IANA time zone the expression is read in (`Europe/Berlin`), or `UTC`.
    pub timezone: String,
    /// Each tick's task payload: its JSON, or a string when it is not JSON.
    pub payload: serde_json::Value,
    /// Missed ticks: `{"policy":"skip"}` (fire the latest once),
    /// `{"policy":"none"}` or `{"policy":"all","max":N}` (every missed tick,
    /// at most N).
    #[schema(value_type = Object)]
    pub misfire: serde_json::Value,
    /// Ticks while the previous run is unfinished: `allow` or `skip`.
    pub overlap: String,
    /// Paused: its ticks pass without a task.
    pub paused: bool,
    /// Every tick at or before this instant is handled.
    pub last_tick_ms: u64,
    /// The next tick after `last_tick_ms` (in the past while no leader has
    /// fired it yet); `null` if the expression never fires again.
    pub next_fire_ms: Option<u64>,
    /// The id of the task of the last fired tick.
    pub last_task: Option<String>,
    /// That task's state, while it is still stored.
    pub last_state: Option<String>,
}

impl From<ScheduleInfo> for ScheduleView {
    fn from(info: ScheduleInfo) -> Self {
        let s = info.schedule;
        let payload = serde_json::from_str(&s.payload).unwrap_or(serde_json::Value::String(s.payload));
        // Core's own serde names, so the API says what the store keeps.
        let misfire = serde_json::to_value(s.misfire).unwrap_or(serde_json::Value::Null);
        let overlap = match serde_json::to_value(s.overlap) {
            Ok(serde_json::Value::String(o)) => o,
            _ => format!("{:?}", s.overlap),
        };
        Self {
            name: s.name,
            task: s.task,
            cron: s.cron,
            timezone: s.timezone,
            payload,
            misfire,
            overlap,
            paused: info.paused,
            last_tick_ms: info.last_tick.as_millis(),
            next_fire_ms: info.next_fire.map(|t| t.as_millis()),
            last_task: info.last_task.map(|id| id.into_string()),
            last_state: info.last_state.map(|s| s.as_str().to_owned()),
        }
    }
}

/// Answer to the removal of a schedule.
#[derive(Clone, Debug, Deserialize, Serialize, ToSchema)]
pub struct ScheduleDeleteResponse {
    /// The schedule.
    pub name: String,
    /// Always `true`: a schedule that did not exist answers `404 not_found`.
    pub deleted: bool,
}

/// A named queue as the API shows it: one that has waiting or running
/// tasks, is paused or has limits. Times are epoch milliseconds of the store's clock.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
pub struct QueueView {
    /// The queue's name.
    pub queue: String,
    /// Tasks waiting in it (`CREATED` or `PENDING`), due or not.
    pub waiting: u64,
    /// Of those, the ones due now.
    pub due: u64,
    /// The due time of its earliest waiting task that is due; `null` when
    /// none is due.
    pub oldest_due: Option<u64>,
    /// How long that task has waited past its due time: the store's now
    /// minus `oldest_due` (what to alert on); `null` when none is due.
    pub latency_ms: Option<u64>,
    /// Paused fleet-wide: no process claims its tasks until it is resumed.
    pub paused: bool,
    /// Its tasks `RUNNING` now, across the fleet (what a concurrency
    /// limit counts).
    pub running: u64,
    /// Its fleet-wide limits, set with `PUT /api/queues/{name}/limits`.
    pub limits: QueueLimitsView,
    /// Claims a limit cut short while the queue had more due tasks: a
    /// running total kept by the store since its limits were first set.
    pub throttled: u64,
}

impl QueueView {
    /// `info` seen at the store's `now` (needed only when a task is due).
    pub(crate) fn new(info: QueueInfo, now: Option<Timestamp>) -> Self {
        Self {
            queue: info.queue.into(),
            waiting: info.waiting,
            due: info.due,
            oldest_due: info.oldest_due.map(Timestamp::as_millis),
            latency_ms: info
                .oldest_due
                .zip(now)
                .map(|(due, now)| now.as_millis().saturating_sub(due.as_millis())),
            paused: info.paused,
            running: info.running,
            limits: info.limits.into(),
            throttled: info.throttled,
        }
    }
}

pub(crate) fn counts_view(counts: &executor_core::query::StateCounts) -> CountsView {
    let map = TaskState::ALL.iter().map(|s| (s.as_str().to_owned(), counts.get(*s))).collect();
    let dead_letter = TaskState::ALL.iter().filter(|s| s.is_dead_letter()).map(|s| counts.get(*s)).sum();
    CountsView { counts: map, dead_letter, total: counts.total() }
}
