//! The JSON admin API: submit, get, list, delete, cancel, requeue, counts, info.
//! Each handler carries its OpenAPI description (`#[utoipa::path]`).

use crate::AdminStorage;
use std::time::Duration;

use axum::{
    Json,
    extract::{
        Path, Query, State,
        rejection::{JsonRejection, PathRejection, QueryRejection},
    },
    http::StatusCode,
};
use executor_core::{ListQuery, Submit, SubmitOutcome, TaskBuilder, TaskId, TaskState, query::WorkerInfo};

use crate::{
    Admin, ApiError, ErrorBody,
    views::{
        AnnouncedView, CancelResponse, CountsView, DeleteResponse, InfoView, LeaderView, ListParams,
        PageView, RequeueAllParams, RequeueAllResponse, RequeueFailure, RequeueResponse, RunNowResponse,
        SubmitRequest, SubmitResponse, TaskView, UnreadableView, WorkerView, counts_view,
    },
};

/// Largest page of `GET /api/tasks` and the default size.
pub(crate) const DEFAULT_PAGE: usize = 50;
/// Default and most tasks one `POST /api/dead-letter/requeue` moves.
pub(crate) const DEFAULT_REQUEUE_ALL: usize = 1_000;
pub(crate) const MAX_REQUEUE_ALL: usize = 10_000;
/// Tasks listed per store call while requeueing the dead letter.
const REQUEUE_BATCH: usize = 100;
/// Retryable requeue failures in a row after which a bulk requeue stops:
/// the store is failing, not one task.
const STORE_DOWN_AFTER: usize = 3;

type ApiResult<T> = Result<T, ApiError>;

pub(crate) fn task_id(raw: &str) -> ApiResult<TaskId> {
    TaskId::new(raw).map_err(ApiError::from)
}

/// Submit a task by handler name with a JSON payload.
#[utoipa::path(post, path = "/api/tasks", tag = "tasks", request_body = SubmitRequest,
    responses(
        (status = 201, description = "Stored", body = SubmitResponse),
        (status = 200, description = "Idempotent repeat: the existing task", body = SubmitResponse),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 409, description = "Duplicate id", body = ErrorBody),
        (status = 413, description = "Body or payload too large", body = ErrorBody),
        (status = 415, description = "Body without `Content-Type: application/json`", body = ErrorBody),
        (status = 422, description = "JSON of the wrong shape, unknown task name, invalid id or option", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn submit<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    body: Result<Json<SubmitRequest>, JsonRejection>,
) -> ApiResult<(StatusCode, Json<SubmitResponse>)> {
    let Json(req) = body?;
    let client = admin.client();
    let plain = req.id.is_none() && req.delay_ms.is_none() && !req.idempotent;
    let submitted = if plain {
        client.submit_json(&req.name, req.payload).await?
    } else {
        let defaults = admin.defaults(&req.name).unwrap_or_default();
        let mut builder = TaskBuilder::new(req.name, req.payload, defaults);
        if let Some(id) = req.id {
            builder = builder.id(id);
        }
        if let Some(ms) = req.delay_ms {
            builder = builder.delay(Duration::from_millis(ms));
        }
        if req.idempotent {
            builder = builder.idempotent();
        }
        client.submit_new(builder.into_new_task()?).await?
    };
    let (id, outcome) = (submitted.id, submitted.outcome);
    let status = if outcome == SubmitOutcome::Created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(SubmitResponse { id: id.into_string(), outcome: outcome.as_str().to_owned() })))
}

/// One task, with every attempt the store kept (`all_attempts`).
#[utoipa::path(get, path = "/api/tasks/{id}", tag = "tasks",
    params(("id" = String, Path, description = "Task id: 1 to 191 bytes of UTF-8, no whitespace or control characters",
        min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$")),
    responses(
        (status = 200, description = "The task", body = TaskView),
        (status = 404, description = "No such task", body = ErrorBody),
        (status = 422, description = "Not a valid id", body = ErrorBody),
        (status = 500, description = "`corrupt_record`: the stored record does not parse; the message says why. \
            Inspect it in the store, or delete it", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn get_task<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<TaskView>> {
    let Path(id) = path?;
    let id = task_id(&id)?;
    match admin.client().status(&id).await? {
        Some(record) => Ok(Json(TaskView::with_attempts(record))),
        None => Err(executor_core::Error::NotFound(id).into()),
    }
}

/// Delete a task in any state, readable or not: the way out for a record
/// that no longer parses. A worker still running it has its result refused.
#[utoipa::path(delete, path = "/api/tasks/{id}", tag = "tasks",
    params(("id" = String, Path, description = "Task id: 1 to 191 bytes of UTF-8, no whitespace or control characters",
        min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$")),
    responses(
        (status = 200, description = "Deleted", body = DeleteResponse),
        (status = 404, description = "No such task", body = ErrorBody),
        (status = 422, description = "Not a valid id", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn delete<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<DeleteResponse>> {
    let Path(id) = path?;
    let id = task_id(&id)?;
    delete_task(&admin, id).await.map(Json)
}

pub(crate) async fn delete_task<S: AdminStorage>(admin: &Admin<S>, id: TaskId) -> ApiResult<DeleteResponse> {
    if admin.client().delete(&id).await? {
        Ok(DeleteResponse { id: id.into_string(), deleted: true })
    } else {
        Err(executor_core::Error::NotFound(id).into())
    }
}

/// One page of the tasks in a state, optionally of one name.
#[utoipa::path(get, path = "/api/tasks", tag = "tasks", params(ListParams),
    responses(
        (status = 200, description = "A page; follow `next`. Records that do not parse are skipped and \
            listed in `unreadable`", body = PageView),
        (status = 422, description = "Bad state, page size, name or cursor", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn list<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    query: Result<Query<ListParams>, QueryRejection>,
) -> ApiResult<Json<PageView>> {
    let Query(q) = query?;
    let state: TaskState = q.state.parse()?;
    let mut query = ListQuery::new(state, q.limit.unwrap_or(DEFAULT_PAGE));
    query.cursor = q.cursor;
    query.name = q.name.filter(|n| !n.is_empty());
    let page = admin.client().list(query).await?;
    Ok(Json(PageView {
        tasks: page.tasks.into_iter().map(TaskView::from).collect(),
        next: page.next,
        unreadable: page.unreadable.into_iter().map(|u| UnreadableView::new(state, u)).collect(),
    }))
}

/// Cancel a waiting task, or ask a running one to stop.
#[utoipa::path(post, path = "/api/tasks/{id}/cancel", tag = "tasks",
    params(("id" = String, Path, description = "Task id: 1 to 191 bytes of UTF-8, no whitespace or control characters",
        min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$")),
    responses(
        (status = 200, description = "Cancelled or requested", body = CancelResponse),
        (status = 404, description = "No such task", body = ErrorBody),
        (status = 409, description = "Already finished", body = ErrorBody),
        (status = 422, description = "Not a valid id", body = ErrorBody),
        (status = 500, description = "`corrupt_record`: the stored record does not parse", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn cancel<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<CancelResponse>> {
    let Path(id) = path?;
    let id = task_id(&id)?;
    let outcome = admin.client().cancel(&id).await?;
    Ok(Json(CancelResponse { id: id.into_string(), outcome: outcome.as_str().to_owned() }))
}

/// Move a dead-lettered task back to `PENDING`, due now, attempts reset.
#[utoipa::path(post, path = "/api/tasks/{id}/requeue", tag = "dead letter",
    params(("id" = String, Path, description = "Task id: 1 to 191 bytes of UTF-8, no whitespace or control characters",
        min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$")),
    responses(
        (status = 200, description = "Requeued", body = RequeueResponse),
        (status = 404, description = "No such task", body = ErrorBody),
        (status = 409, description = "Not in the dead letter", body = ErrorBody),
        (status = 422, description = "Not a valid id", body = ErrorBody),
        (status = 500, description = "`corrupt_record`: the stored record does not parse", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn requeue<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<RequeueResponse>> {
    let Path(id) = path?;
    let id = task_id(&id)?;
    admin.client().requeue(&id).await?;
    Ok(Json(RequeueResponse { id: id.into_string(), state: TaskState::Pending.as_str().to_owned() }))
}

/// Make a waiting task (`CREATED`, `PENDING`) due now: a delayed task, a
/// retry waiting out its backoff, a debounced task. One already due keeps
/// its place.
#[utoipa::path(post, path = "/api/tasks/{id}/run-now", tag = "tasks",
    params(("id" = String, Path, description = "Task id: 1 to 191 bytes of UTF-8, no whitespace or control characters",
        min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$")),
    responses(
        (status = 200, description = "Due now", body = RunNowResponse),
        (status = 404, description = "No such task", body = ErrorBody),
        (status = 409, description = "Not waiting (running, finished or dead-lettered: requeue those)", body = ErrorBody),
        (status = 422, description = "Not a valid id", body = ErrorBody),
        (status = 500, description = "`corrupt_record`: the stored record does not parse", body = ErrorBody),
        (status = 501, description = "The store cannot move a task's due time", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn run_now<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<RunNowResponse>> {
    let Path(id) = path?;
    let id = task_id(&id)?;
    let client = admin.client();
    client.run_now(&id).await?;
    let task = client.status(&id).await?.ok_or_else(|| executor_core::Error::NotFound(id.clone()))?;
    Ok(Json(RunNowResponse {
        id: id.into_string(),
        state: task.state.as_str().to_owned(),
        due_at: task.due_at.as_millis(),
    }))
}

/// Requeue the dead letter (`FAILED`, `TIMEOUT`, `ERROR`), in batches, up
/// to `limit` tasks per call.
#[utoipa::path(post, path = "/api/dead-letter/requeue", tag = "dead letter", params(RequeueAllParams),
    responses(
        (status = 200, description = "What was requeued, what failed and why, the records that do not parse; \
            call again while `more`", body = RequeueAllResponse),
        (status = 422, description = "Bad limit", body = ErrorBody),
        (status = 503, description = "Store unavailable before anything was requeued", body = ErrorBody),
    ))]
pub(crate) async fn requeue_all<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    query: Result<Query<RequeueAllParams>, QueryRejection>,
) -> ApiResult<Json<RequeueAllResponse>> {
    let Query(q) = query?;
    let limit = q.limit.unwrap_or(DEFAULT_REQUEUE_ALL);
    if limit == 0 || limit > MAX_REQUEUE_ALL {
        return Err(ApiError::invalid(format!("limit {limit} is outside 1..={MAX_REQUEUE_ALL}")));
    }
    Ok(Json(requeue_dead_letter(&admin, limit).await?))
}

/// Walks each dead-letter state page by page (the cursor stays valid while
/// tasks leave the state) and requeues each readable task, up to `limit`
/// in all. One task that fails, or one record that does not parse, is
/// reported and skipped, never stops the others (no neighbour harm). The store
/// failing outright stops the walk: before anything was tried that is the
/// error; after, the answer says what was done and why it stopped.
pub(crate) async fn requeue_dead_letter<S: AdminStorage>(
    admin: &Admin<S>,
    limit: usize,
) -> ApiResult<RequeueAllResponse> {
    let client = admin.client();
    let mut out = RequeueAllResponse {
        requeued: 0,
        errors: Vec::new(),
        unreadable: Vec::new(),
        more: false,
        interrupted: None,
    };
    let mut budget = limit;
    let mut failing = 0;
    'states: for state in TaskState::ALL.into_iter().filter(|s| s.is_dead_letter()) {
        let mut cursor = None;
        while budget > 0 {
            let mut query = ListQuery::new(state, budget.min(REQUEUE_BATCH));
            query.cursor = cursor;
            let page = match client.list(query).await {
                Ok(page) => page,
                Err(e) if out.requeued == 0 && out.errors.is_empty() => return Err(e.into()),
                Err(e) => {
                    out.interrupted = Some(ApiError::from(e).body);
                    break 'states;
                }
            };
            out.unreadable.extend(page.unreadable.into_iter().map(|u| UnreadableView::new(state, u)));
            for task in page.tasks {
                budget -= 1;
                match client.requeue(&task.id).await {
                    Ok(()) => {
                        out.requeued += 1;
                        failing = 0;
                    }
                    Err(e) => {
                        failing = if e.is_retryable() { failing + 1 } else { 0 };
                        let e = ApiError::from(e);
                        if failing == STORE_DOWN_AFTER {
                            out.interrupted = Some(e.body.clone());
                        }
                        out.errors.push(RequeueFailure {
                            id: task.id.into_string(),
                            code: e.body.code,
                            message: e.body.message,
                        });
                        if out.interrupted.is_some() {
                            break 'states;
                        }
                    }
                }
            }
            cursor = page.next;
            if cursor.is_none() {
                break;
            }
        }
    }
    if out.interrupted.is_some() {
        out.more = true;
    } else if budget == 0 {
        // Unknown counts say "call again": a call with nothing left is harmless.
        out.more = client.counts().await.map_or(true, |c| counts_view(&c).dead_letter > 0);
    }
    Ok(out)
}

/// Tasks by state.
#[utoipa::path(get, path = "/api/counts", tag = "cluster",
    responses(
        (status = 200, description = "Counts", body = CountsView),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn counts<S: AdminStorage>(State(admin): State<Admin<S>>) -> ApiResult<Json<CountsView>> {
    Ok(Json(counts_view(&admin.client().counts().await?)))
}

/// The namespace, its housekeeping leader, and this process as a worker.
#[utoipa::path(get, path = "/api/info", tag = "cluster",
    responses(
        (status = 200, description = "Info", body = InfoView),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn info<S: AdminStorage>(State(admin): State<Admin<S>>) -> ApiResult<Json<InfoView>> {
    Ok(Json(info_view(&admin).await?))
}

pub(crate) async fn info_view<S: AdminStorage>(admin: &Admin<S>) -> ApiResult<InfoView> {
    let client = admin.client();
    let leader = client.storage().leader(client.namespace()).await?;
    let worker = admin.worker.as_ref().map(|w| WorkerView {
        id: w.id.as_str().to_owned(),
        handlers: w.handlers.clone(),
        is_leader: leader.as_ref().is_some_and(|l| l.worker == w.id),
    });
    let announced = client.workers().await?;
    let handler_sets = WorkerInfo::handler_sets(&announced).len();
    let mut workers: Vec<AnnouncedView> = announced
        .into_iter()
        .map(|w| AnnouncedView {
            id: w.worker.as_str().to_owned(),
            handlers: w.names,
            until_ms: w.until.as_millis(),
        })
        .collect();
    workers.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(InfoView {
        namespace: client.namespace().as_str().to_owned(),
        leader: leader.map(LeaderView::from),
        worker,
        workers,
        handler_sets,
    })
}
