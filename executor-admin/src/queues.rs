//! The JSON admin API of named queues (issue 16): list them with their
//! depth and latency, pause and resume one. A store without queue controls
//! answers `501 unsupported` on each.

use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
};
use executor_core::{QueueInfo, QueueName, Result, storage::Storage};

use crate::{Admin, ApiError, ErrorBody, views::QueueView};

type ApiResult<T> = std::result::Result<T, ApiError>;

/// Every queue of the namespace that has waiting tasks or is paused, by
/// name, with its latency on the store's clock (due times are on it too).
/// The clock is read only when some queue has a due task.
pub(crate) async fn views<S: Storage>(admin: &Admin<S>) -> Result<Vec<QueueView>> {
    let client = admin.client();
    let listed = client.queues().await?;
    let now = if listed.iter().any(|q| q.oldest_due.is_some()) {
        Some(client.storage().now(client.namespace()).await?)
    } else {
        None
    };
    Ok(listed.into_iter().map(|q| QueueView::new(q, now)).collect())
}

/// Every queue that has waiting tasks or is paused.
#[utoipa::path(get, path = "/api/queues", tag = "queues",
    responses(
        (status = 200, description = "Every queue with waiting tasks or paused, by name: depth, due tasks, \
            the oldest due time and its latency, paused", body = [QueueView]),
        (status = 501, description = "`unsupported`: the store has no queue controls", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn list<S: Storage>(State(admin): State<Admin<S>>) -> ApiResult<Json<Vec<QueueView>>> {
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
pub(crate) async fn pause<S: Storage>(
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
pub(crate) async fn resume<S: Storage>(
    State(admin): State<Admin<S>>,
    path: std::result::Result<Path<String>, PathRejection>,
) -> ApiResult<Json<QueueView>> {
    let Path(name) = path?;
    set_paused(&admin, &name, false).await.map(Json)
}

/// Pauses or resumes queue `name` and reads it back. A resumed queue with
/// no waiting task is not listed by the store; it reads as empty.
pub(crate) async fn set_paused<S: Storage>(
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
    let found = views(admin).await?.into_iter().find(|v| v.queue == queue.as_str());
    Ok(found.unwrap_or_else(|| QueueView::new(QueueInfo::new(queue), None)))
}
