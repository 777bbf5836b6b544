//! The OpenAPI document, generated from the handlers' `#[utoipa::path]`
//! attributes and the views' schemas, and the route that serves it.

use axum::Json;
use utoipa::OpenApi;

use crate::{ErrorBody, api, dashboard, history, limits, queues, schedules, views};

/// The admin router's OpenAPI 3.1 document. Paths are relative to where
/// the router is mounted.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Reliable Executor admin API",
        description = "Submit, inspect, cancel, requeue and delete tasks; counts and leadership; throughput per minute; \
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
        api::run_now,
        api::requeue_all,
        api::counts,
        api::info,
        history::get,
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
        dashboard::tasks::list,
        dashboard::task,
        dashboard::requeue,
        dashboard::run_now,
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
        views::AttemptView,
        views::PageView,
        views::UnreadableView,
        views::CountsView,
        views::CancelResponse,
        views::DeleteResponse,
        views::RequeueResponse,
        views::RunNowResponse,
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
        history::HistoryView,
        history::HistoryPoint,
        history::HistoryTotals,
    )),
    modifiers(&ReadOnlyAnswers),
    tags(
        (name = "tasks", description = "Submit and inspect tasks"),
        (name = "dead letter", description = "FAILED, TIMEOUT and ERROR tasks: requeue them"),
        (name = "cluster", description = "Counts, leadership and throughput history"),
        (name = "schedules", description = "Cron schedules: list, pause, resume, remove"),
        (name = "queues", description = "Named queues: depth, latency, running tasks; pause, resume and limits fleet-wide"),
        (name = "dashboard", description = "HTML pages and their forms"),
        (name = "meta", description = "This document"),
    )
)]
pub struct ApiDoc;

/// Adds the answer of a read-only admin (`403 read_only`, see
/// `Admin::read_only`) to every operation that changes something: every
/// one but `GET`.
struct ReadOnlyAnswers;

impl utoipa::Modify for ReadOnlyAnswers {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{Content, Ref, ResponseBuilder};
        for item in doc.paths.paths.values_mut() {
            for op in [&mut item.post, &mut item.put, &mut item.delete, &mut item.patch].into_iter().flatten()
            {
                let content = Content::new(Some(Ref::from_schema_name("ErrorBody")));
                let answer = ResponseBuilder::new()
                    .description("The admin is read-only (`read_only`): it changes nothing")
                    .content("application/json", content)
                    .build();
                op.responses.responses.entry("403".to_owned()).or_insert(answer.into());
            }
        }
    }
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "meta",
    responses((status = 200, description = "OpenAPI 3.1 document", body = Object)))]
pub(crate) async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
