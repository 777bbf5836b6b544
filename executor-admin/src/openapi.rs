//! The OpenAPI document, generated from the handlers' `#[utoipa::path]`
//! attributes and the views' schemas, and the route that serves it.

use axum::Json;
use utoipa::OpenApi;

use crate::{ErrorBody, api, dashboard, limits, queues, schedules, views};

/// The admin router's OpenAPI 3.1 document. Paths are relative to where
/// the router is mounted.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Reliable Executor admin API",
        description = "Submit, inspect, cancel, requeue and delete tasks; counts and leadership; \
                       list, pause, resume and remove cron schedules; list, pause and resume named \
                       queues and set their fleet-wide limits. \
                       Errors are JSON `{code, message}` with stable codes. A stored record that \
                       does not parse is skipped by lists and bulk requeues and named in their \
                       `unreadable`; reading it answers `500 corrupt_record`; deleting it is the way out."
    ),
    paths(
        api::submit,
        api::list,
        api::get_task,
        api::delete,
        api::cancel,
        api::requeue,
        api::requeue_all,
        api::counts,
        api::info,
        schedules::list,
        schedules::pause,
        schedules::resume,
        schedules::delete,
        queues::list,
        queues::pause,
        queues::resume,
        queues::put_limits,
        openapi_json,
        dashboard::overview,
        dashboard::task,
        dashboard::requeue,
        dashboard::cancel,
        dashboard::delete,
        dashboard::requeue_all,
        dashboard::schedules::pause,
        dashboard::schedules::resume,
        dashboard::queues::pause,
        dashboard::queues::resume,
        dashboard::queues::limits,
    ),
    components(schemas(
        ErrorBody,
        views::SubmitRequest,
        views::SubmitResponse,
        views::TaskView,
        views::PageView,
        views::UnreadableView,
        views::CountsView,
        views::CancelResponse,
        views::DeleteResponse,
        views::RequeueResponse,
        views::RequeueAllResponse,
        views::RequeueFailure,
        views::InfoView,
        views::LeaderView,
        views::WorkerView,
        views::AnnouncedView,
        views::ScheduleView,
        views::ScheduleDeleteResponse,
        views::QueueView,
        limits::QueueLimitsView,
        limits::RateLimitView,
        limits::QueueLimitsRequest,
        limits::RateLimitRequest,
    )),
    tags(
        (name = "tasks", description = "Submit and inspect tasks"),
        (name = "dead letter", description = "FAILED, TIMEOUT and ERROR tasks: requeue them"),
        (name = "cluster", description = "Counts and leadership"),
        (name = "schedules", description = "Cron schedules: list, pause, resume, remove"),
        (name = "queues", description = "Named queues: depth, latency, running tasks; pause, resume and limits fleet-wide"),
        (name = "dashboard", description = "HTML pages and their forms"),
        (name = "meta", description = "This document"),
    )
)]
pub struct ApiDoc;

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta",
    responses((status = 200, description = "OpenAPI 3.1 document", body = Object)))]
pub(crate) async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
