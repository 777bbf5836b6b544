//! The admin router: every route registered once, in a table the OpenAPI
//! test compares with the document.

use crate::AdminStorage;
use axum::{
    Router,
    extract::DefaultBodyLimit,
    handler::Handler,
    http::StatusCode,
    routing::{MethodFilter, on},
};
use executor_core::MemoryStorage;

use crate::{Admin, ApiError, api, dashboard, history, openapi, queues, schedules};

struct Routes<S> {
    router: Router<Admin<S>>,
    table: Vec<(&'static str, &'static str)>,
}

impl<S: AdminStorage> Routes<S> {
    fn add<H, T>(mut self, method: &'static str, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, Admin<S>>,
        T: 'static,
    {
        let filter = match method {
            "POST" => MethodFilter::POST,
            "PUT" => MethodFilter::PUT,
            "DELETE" => MethodFilter::DELETE,
            _ => MethodFilter::GET,
        };
        self.router = self.router.route(path, on(filter, handler));
        self.table.push((method, path));
        self
    }
}

fn routes<S: AdminStorage>() -> Routes<S> {
    Routes { router: Router::new(), table: Vec::new() }
        .add("POST", "/api/tasks", api::submit::<S>)
        .add("GET", "/api/tasks", api::list::<S>)
        .add("GET", "/api/tasks/{id}", api::get_task::<S>)
        .add("DELETE", "/api/tasks/{id}", api::delete::<S>)
        .add("POST", "/api/tasks/{id}/cancel", api::cancel::<S>)
        .add("POST", "/api/tasks/{id}/requeue", api::requeue::<S>)
        .add("POST", "/api/tasks/{id}/run-now", api::run_now::<S>)
        .add("POST", "/api/dead-letter/requeue", api::requeue_all::<S>)
        .add("GET", "/api/counts", api::counts::<S>)
        .add("GET", "/api/info", api::info::<S>)
        .add("GET", "/api/history", history::get::<S>)
        .add("GET", "/api/schedules", schedules::list::<S>)
        .add("POST", "/api/schedules/{name}/pause", schedules::pause::<S>)
        .add("POST", "/api/schedules/{name}/resume", schedules::resume::<S>)
        .add("DELETE", "/api/schedules/{name}", schedules::delete::<S>)
        .add("GET", "/api/queues", queues::list::<S>)
        .add("POST", "/api/queues/{name}/pause", queues::pause::<S>)
        .add("POST", "/api/queues/{name}/resume", queues::resume::<S>)
        .add("PUT", "/api/queues/{name}/limits", queues::put_limits::<S>)
        .add("GET", "/openapi.json", openapi::openapi_json)
        .add("GET", "/", dashboard::overview::<S>)
        .add("GET", "/tasks", dashboard::tasks::list::<S>)
        .add("GET", "/tasks/{id}", dashboard::task::<S>)
        .add("POST", "/tasks/{id}/requeue", dashboard::requeue::<S>)
        .add("POST", "/tasks/{id}/run-now", dashboard::run_now::<S>)
        .add("POST", "/tasks/{id}/cancel", dashboard::cancel::<S>)
        .add("POST", "/tasks/{id}/delete", dashboard::delete::<S>)
        .add("POST", "/dead-letter/requeue", dashboard::requeue_all::<S>)
        .add("POST", "/schedules/{name}/pause", dashboard::schedules::pause::<S>)
        .add("POST", "/schedules/{name}/resume", dashboard::schedules::resume::<S>)
        .add("POST", "/queues/{name}/pause", dashboard::queues::pause::<S>)
        .add("POST", "/queues/{name}/resume", dashboard::queues::resume::<S>)
        .add("POST", "/queues/{name}/limits", dashboard::queues::limits::<S>)
}

/// The `(method, path)` of every route [`admin_router`] serves, paths
/// relative to where it is mounted. The OpenAPI document lists the same.
pub fn admin_routes() -> Vec<(&'static str, &'static str)> {
    routes::<MemoryStorage>().table
}

/// The admin API (`/api/...`), the dashboard (`/`, `/tasks/{id}`) and the
/// OpenAPI document (`/openapi.json`) for an [`executor_core::Executor`] or a
/// [`executor_core::Client`]. Mount it under any prefix with
/// [`Router::nest`]; put your authentication in front of it (it has none,
/// and its forms change state): any tower layer, e.g. `admin_router(..)
/// .layer(axum::middleware::from_fn(check_token))` (see
/// `docs/operations.md`, Admin API and dashboard), or make it
/// [`Admin::read_only`].
///
/// ```
/// use executor_core::{Executor, MemoryStorage};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), executor_core::Error> {
/// let executor = Executor::builder(MemoryStorage::new()).build().await?;
/// let app: axum::Router = axum::Router::new().nest("/admin", reliable_executor_admin::admin_router(&executor));
/// # let _ = app;
/// # Ok(())
/// # }
/// ```
pub fn admin_router<S: AdminStorage>(admin: impl Into<Admin<S>>) -> Router {
    let admin = admin.into();
    let limit = admin.body_limit;
    let read_only = admin.read_only;
    let router = routes::<S>()
        .router
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit));
    let router = if read_only { router.layer(axum::middleware::from_fn(refuse_changes)) } else { router };
    router.with_state(admin)
}

/// In front of every route of a read-only admin: only `GET` and `HEAD`
/// pass.
async fn refuse_changes(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if matches!(*request.method(), axum::http::Method::GET | axum::http::Method::HEAD) {
        next.run(request).await
    } else {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "read_only",
            "this admin is read-only: it shows the store and changes nothing",
        )
        .into_response()
    }
}

async fn no_route() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no_route", "no admin route has this path; see /openapi.json")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take this method",
    )
}
