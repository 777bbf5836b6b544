//! The JSON admin API of cron schedules: list, pause, resume, remove.
//! A store that keeps no schedules answers `501 unsupported` on each.

use crate::AdminStorage;
use axum::{
    Json,
    extract::{Path, State, rejection::PathRejection},
    http::StatusCode,
};

use crate::{
    Admin, ApiError, ErrorBody,
    views::{ScheduleDeleteResponse, ScheduleView},
};

type ApiResult<T> = Result<T, ApiError>;

/// `404 not_found` for schedule `name`.
pub(crate) fn no_schedule(name: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no schedule is named `{name}`"))
}

/// Every cron schedule of the namespace, by name.
#[utoipa::path(get, path = "/api/schedules", tag = "schedules",
    responses(
        (status = 200, description = "Every schedule, by name, with its next fire time and the state of \
            its last task", body = [ScheduleView]),
        (status = 501, description = "`unsupported`: the store keeps no cron schedules", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn list<S: AdminStorage>(
    State(admin): State<Admin<S>>,
) -> ApiResult<Json<Vec<ScheduleView>>> {
    let listed = admin.client().schedules().list().await?;
    Ok(Json(listed.into_iter().map(ScheduleView::from).collect()))
}

/// Pause a schedule: its ticks pass without a task, and resuming fires
/// none of them.
#[utoipa::path(post, path = "/api/schedules/{name}/pause", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses(
        (status = 200, description = "Paused (pausing a paused schedule changes nothing); the schedule now",
            body = ScheduleView),
        (status = 404, description = "No such schedule", body = ErrorBody),
        (status = 422, description = "The name is not UTF-8", body = ErrorBody),
        (status = 501, description = "`unsupported`: the store keeps no cron schedules", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn pause<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<ScheduleView>> {
    let Path(name) = path?;
    set_paused(&admin, &name, true).await.map(Json)
}

/// Resume a paused schedule from its next tick.
#[utoipa::path(post, path = "/api/schedules/{name}/resume", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses(
        (status = 200, description = "Resumed (resuming an active schedule changes nothing); the schedule now",
            body = ScheduleView),
        (status = 404, description = "No such schedule", body = ErrorBody),
        (status = 422, description = "The name is not UTF-8", body = ErrorBody),
        (status = 501, description = "`unsupported`: the store keeps no cron schedules", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn resume<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<ScheduleView>> {
    let Path(name) = path?;
    set_paused(&admin, &name, false).await.map(Json)
}

/// Pauses or resumes `name` and reads it back. Removed between the two
/// (by another process) is `404`, as if it had not existed.
pub(crate) async fn set_paused<S: AdminStorage>(
    admin: &Admin<S>,
    name: &str,
    paused: bool,
) -> ApiResult<ScheduleView> {
    let schedules = admin.client().schedules();
    let found = if paused { schedules.pause(name).await? } else { schedules.resume(name).await? };
    if !found {
        return Err(no_schedule(name));
    }
    match schedules.get(name).await? {
        Some(info) => Ok(info.into()),
        None => Err(no_schedule(name)),
    }
}

/// Remove a schedule. The tasks it submitted stay; a schedule declared
/// with `#[reliable_task(cron = ..)]` comes back when a process with that
/// attribute starts.
#[utoipa::path(delete, path = "/api/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "Schedule name")),
    responses(
        (status = 200, description = "Removed", body = ScheduleDeleteResponse),
        (status = 404, description = "No such schedule", body = ErrorBody),
        (status = 422, description = "The name is not UTF-8", body = ErrorBody),
        (status = 501, description = "`unsupported`: the store keeps no cron schedules", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ))]
pub(crate) async fn delete<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<Json<ScheduleDeleteResponse>> {
    let Path(name) = path?;
    if admin.client().schedules().remove(&name).await? {
        Ok(Json(ScheduleDeleteResponse { name, deleted: true }))
    } else {
        Err(no_schedule(&name))
    }
}
