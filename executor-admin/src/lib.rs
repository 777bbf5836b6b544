//! Operating an `executor-core` executor over HTTP: a JSON admin API, a
//! server-rendered dashboard, an OpenAPI document, and Prometheus metrics.
//!
//! One call gives the admin [`axum::Router`], generic over the storage,
//! mountable under any prefix in your own service; another installs the
//! Prometheus recorder and gives `/metrics`:
//!
//! ```
//! use executor_core::{Executor, MemoryStorage};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let metrics = reliable_executor_admin::install_prometheus()?; // once per process, before the executor
//! let executor = Executor::builder(MemoryStorage::new()).namespace("shop").build().await?;
//! let app = axum::Router::new()
//!     .nest("/admin", reliable_executor_admin::admin_router(&executor))
//!     .merge(reliable_executor_admin::metrics_router(metrics));
//! // axum::serve(listener, app).with_graceful_shutdown(...).await?;
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! | path (under the mount) | what |
//! |---|---|
//! | `GET /` | dashboard (`?refresh=5`: refreshed in place every 5 s): a find-a-task box, counts linking to each state's pages, dead letter with requeue buttons, unreadable records with delete buttons, recent failures, named queues with pause/resume buttons and a limits form, cron schedules with pause/resume buttons |
//! | `GET /tasks?state=&cursor=` | one state's tasks a page at a time (the store's cursor: every page costs the same), with the states as tabs; `?id=` finds a task (303 to its page) |
//! | `GET /tasks/{id}` | a task's record |
//! | `POST /tasks/{id}/requeue`, `/cancel`, `/delete`, `POST /dead-letter/requeue`, `POST /schedules/{name}/pause`, `/resume`, `POST /queues/{name}/pause`, `/resume`, `/limits` | the dashboard's forms |
//! | `POST /api/tasks` | submit `{name, payload, id?, delay_ms?, idempotent?}` |
//! | `GET /api/tasks?state=&cursor=&limit=` | a page of tasks in a state, and the records in it that do not parse |
//! | `GET /api/tasks/{id}`, `DELETE /api/tasks/{id}` | a task; delete it (any state, readable or not) |
//! | `POST /api/tasks/{id}/cancel`, `/requeue` | cancel; requeue from the dead letter |
//! | `POST /api/dead-letter/requeue?limit=` | requeue the dead letter in bounded batches |
//! | `GET /api/counts`, `/api/info` | counts by state; namespace, leader, this worker |
//! | `GET /api/history?minutes=&name=` | attempts succeeded and failed per minute over the last 1 to 1440 minutes (default 60), zeros filled, with totals and the names seen |
//! | `GET /api/schedules` | every cron schedule: definition, paused, last tick, next fire, last task and its state |
//! | `POST /api/schedules/{name}/pause`, `/resume`; `DELETE /api/schedules/{name}` | pause, resume, remove a schedule |
//! | `GET /api/queues` | every queue with waiting or running tasks, paused or limited: waiting, due, oldest due time, latency (store now − oldest due), paused, running, limits, throttled claims |
//! | `POST /api/queues/{name}/pause`, `/resume` | pause or resume a queue on every process |
//! | `PUT /api/queues/{name}/limits` | set or clear a queue's fleet-wide limits `{concurrency?, rate?: {starts, per_ms, burst?}}` |
//! | `GET /openapi.json` | the OpenAPI document of all of the above |
//!
//! Paths in the OpenAPI document are relative to the mount. Nested with
//! axum's `Router::nest("/admin", ..)`, the dashboard `GET /` is served at
//! `/admin` exactly: axum does not route `/admin/` into the nested router
//! (add a redirect in your own router if your users type the slash).
//!
//! The router has no authentication of its own: put your service's auth
//! layer on it (`admin_router(..).layer(..)`, any tower layer), or build it
//! from [`Admin::read_only`] to serve a dashboard and API that show
//! everything and change nothing (`403 read_only` for any method but `GET`
//! and `HEAD`; pages without forms).
//!
//! Errors are JSON [`ErrorBody`] `{code, message}` with the stable codes
//! listed there. The store keeps no history of attempts: a task shows its
//! attempt count and last error only.
//!
//! A record that does not parse (edited by hand, written by a newer
//! version) never breaks its neighbours: lists, the dashboard and the bulk
//! requeue skip it and name it (`unreadable`), reading it answers
//! `500 corrupt_record` with the reason, and deleting it is the way out.

mod admin;
mod api;
mod dashboard;
mod error;
mod history;
mod limits;
mod metrics;
mod openapi;
mod queues;
mod router;
mod schedules;
mod views;

pub use admin::{Admin, AdminStorage, DEFAULT_BODY_LIMIT};
pub use error::{ApiError, ErrorBody};
pub use history::{HistoryPoint, HistoryTotals, HistoryView};
pub use limits::{QueueLimitsRequest, QueueLimitsView, RateLimitRequest, RateLimitView};
pub use metrics::{
    LATENCY_BUCKETS, UPKEEP_INTERVAL, install_prometheus, install_prometheus_listener, metrics_router,
    prometheus_builder,
};
pub use metrics_exporter_prometheus::{BuildError, PrometheusHandle};
pub use openapi::ApiDoc;
pub use router::{admin_router, admin_routes};
pub use views::{
    AnnouncedView, AttemptView, CancelResponse, CountsView, DeleteResponse, InfoView, LeaderView, PageView,
    QueueView, RequeueAllResponse, RequeueFailure, RequeueResponse, RunNowResponse, ScheduleDeleteResponse,
    ScheduleView, SubmitRequest, SubmitResponse, TaskView, UnreadableView, WorkerView,
};
