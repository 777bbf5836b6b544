//! The JSON admin API of named queues: list them with their
//! depth, latency, running tasks and limits; pause and resume one; set or
//! clear its fleet-wide limits. A store without queue controls (or, for
//! the limits, without queue limits) answers `501 unsupported`.

use crate::AdminStorage;
use axum::{
    Json,
    extract::{
        Path, State,
        rejection::{JsonRejection, PathRejection},
    },
    http::StatusCode,
};
use executor_core::{
    QueueName, Result,
    queue::{QueueInfo, QueueLimits},
};

use crate::{Admin, ApiError, ErrorBody, limits::QueueLimitsRequest, views::QueueView};

type ApiResult<T> = std::result::Result<T, ApiError>;

/// Every queue of the namespace that has waiting or running tasks, is
/// paused or has limits, by name, with its latency on the store's clock (due times are on it too).
/// The clock is read only when some queue has a due task.
pub(crate) async fn views<S: AdminStorage>(admin: &Admin<S>) -> Result<Vec<QueueView>> {
    let client = admin.client();
    let listed = client.queues().await?;
    let now = if listed.iter().any(|q| q.oldest_due.is_some()) {
        Some(client.storage().now(client.namespace()).await?)
    } else {
        None
    };
    Ok(listed.into_iter().map(|q| QueueView::new(q, now)).collect())
}

/// Every queue that has waiting or running tasks, is paused or has limits.
#[utoipa::path(get, path = "/api/queues", tag = "queues",
    responses(
        (status = 200, description = "Every queue with waiting or running tasks, paused or limited, by \
            name: depth, due tasks, the oldest due time and its latency, paused, running tasks, limits and \
            throttled claims", body = [QueueView]),
        (status = 501, description = "`unsupported`: the store has no queue controls", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn list<S: AdminStorage>(State(admin): State<Admin<S>>) -> ApiResult<Json<Vec<QueueView>>> {
    Ok(Json(views(&admin).await?))
}

/// Pause a queue on every process: from the next claim round on none of
/// its tasks starts; running attempts finish. Kept in the store, whether
/// or not the queue has tasks.
#[utoipa::path(post, path = "/api/queues/{name}/pause", tag = "queues",
    params(("name" = String, Path, description = "Queue name: 1 to 64 ASCII letters, digits, `-`, `_`, `.` or `:`",
        min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]+$")),
    responses(
        (status = 200, description = "Paused (pausing a paused queue changes nothing); the queue now",
            body = QueueView),
        (status = 422, description = "`invalid`: not a valid queue name", body = ErrorBody),
        (status = 501, description = "`unsupported`: the store has no queue controls", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn pause<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: std::result::Result<Path<String>, PathRejection>,
) -> ApiResult<Json<QueueView>> {
    let Path(name) = path?;
    set_paused(&admin, &name, true).await.map(Json)
}

/// Resume a paused queue: its tasks are claimed again from the next claim
/// round on, in their order.
#[utoipa::path(post, path = "/api/queues/{name}/resume", tag = "queues",
    params(("name" = String, Path, description = "Queue name: 1 to 64 ASCII letters, digits, `-`, `_`, `.` or `:`",
        min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]+$")),
    responses(
        (status = 200, description = "Resumed (resuming a queue that is not paused changes nothing); the \
            queue now", body = QueueView),
        (status = 422, description = "`invalid`: not a valid queue name", body = ErrorBody),
        (status = 501, description = "`unsupported`: the store has no queue controls", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn resume<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: std::result::Result<Path<String>, PathRejection>,
) -> ApiResult<Json<QueueView>> {
    let Path(name) = path?;
    set_paused(&admin, &name, false).await.map(Json)
}

/// Pauses or resumes queue `name` and reads it back. A resumed queue with
/// no waiting task is not listed by the store; it reads as empty.
pub(crate) async fn set_paused<S: AdminStorage>(
    admin: &Admin<S>,
    name: &str,
    paused: bool,
) -> ApiResult<QueueView> {
    let queue = QueueName::new(name)?;
    let client = admin.client();
    if paused {
        client.pause_queue(queue.as_str()).await?;
    } else {
        client.resume_queue(queue.as_str()).await?;
    }
    view(admin, queue).await
}

/// Set or clear a queue's fleet-wide limits.
#[utoipa::path(put, path = "/api/queues/{name}/limits", tag = "queues",
    params(("name" = String, Path, description = "Queue name: 1 to 64 ASCII letters, digits, `-`, `_`, `.` or `:`",
        min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]+$")),
    request_body(content = QueueLimitsRequest, description = "The limits from now on, replacing the queue's: \
        `{\"concurrency\": 4, \"rate\": {\"starts\": 50, \"per_ms\": 1000, \"burst\": 50}}`; a limit left out \
        is removed, `{}` removes both"),
    responses(
        (status = 200, description = "Set, enforced from every process's next claim on; the queue now",
            body = QueueView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body without `Content-Type: application/json`", body = ErrorBody),
        (status = 422, description = "`invalid`: not a valid queue name, or a limit out of range (the message \
            names it); `invalid_body`: JSON of the wrong shape", body = ErrorBody),
        (status = 501, description = "`unsupported`: the store has no queue limits", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn put_limits<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: std::result::Result<Path<String>, PathRejection>,
    body: std::result::Result<Json<serde_json::Map<String, serde_json::Value>>, JsonRejection>,
) -> ApiResult<Json<QueueView>> {
    // The name first: a bad name is a bad name whatever the body.
    let Path(name) = path?;
    let queue = QueueName::new(name)?;
    // An object only: serde would read `[]` as a struct with every field
    // left out, which here would clear the limits.
    let Json(object) = body?;
    let req: QueueLimitsRequest = serde_json::from_value(serde_json::Value::Object(object))
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", e.to_string()))?;
    set_limits(&admin, queue, req.limits()?).await.map(Json)
}

/// Sets (or, with no limit in `limits`, clears) `queue`'s limits and reads
/// the queue back.
pub(crate) async fn set_limits<S: AdminStorage>(
    admin: &Admin<S>,
    queue: QueueName,
    limits: QueueLimits,
) -> ApiResult<QueueView> {
    admin.client().set_queue_limits(queue.as_str(), limits).await?;
    view(admin, queue).await
}

/// `queue` as the store lists it now. A queue the store no longer lists
/// (no task, not paused, no limits) reads as empty.
async fn view<S: AdminStorage>(admin: &Admin<S>, queue: QueueName) -> ApiResult<QueueView> {
    let found = views(admin).await?.into_iter().find(|v| v.queue == queue.as_str());
    Ok(found.unwrap_or_else(|| QueueView::new(QueueInfo::new(queue), None)))
}
