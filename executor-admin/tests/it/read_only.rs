//! A read-only admin (`Admin::read_only`) and an authentication layer in
//! front of the admin (the hook is any tower layer the embedding service
//! supplies): what each lets through, what each refuses, and that the
//! OpenAPI document lists the read-only answer on every change.

use std::{
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    extract::Request,
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use executor_core::{TaskId, TaskState};
use reliable_executor_admin::{Admin, ApiDoc, admin_router};
use tower::ServiceExt as _;
use utoipa::OpenApi as _;

use crate::support::{BoxResult, call, executor, json};

/// Every change a client can ask, API and dashboard forms, with a body
/// where the route takes one.
const CHANGES: &[(&str, &str, Option<&str>)] = &[
    ("POST", "/admin/api/tasks", Some(r#"{"name":"echo","payload":1,"id":"new-1"}"#)),
    ("DELETE", "/admin/api/tasks/crm-1", None),
    ("POST", "/admin/api/tasks/crm-1/cancel", None),
    ("POST", "/admin/api/tasks/crm-1/requeue", None),
    ("POST", "/admin/api/dead-letter/requeue", None),
    ("POST", "/admin/api/queues/default/pause", None),
    ("PUT", "/admin/api/queues/default/limits", Some(r#"{"concurrency":1}"#)),
    ("POST", "/admin/tasks/crm-1/requeue", None),
    ("POST", "/admin/tasks/crm-1/delete", None),
    ("POST", "/admin/dead-letter/requeue", None),
    ("POST", "/admin/queues/default/pause", None),
];

#[tokio::test]
async fn a_read_only_admin_shows_everything_and_changes_nothing() -> BoxResult {
    let exec = executor("read-only", Arc::new(AtomicBool::new(true))).await?;
    let writable = Router::new().nest("/admin", admin_router(&exec));
    let read_only = Router::new().nest("/admin", admin_router(Admin::from(&exec).read_only(true)));
    let running = exec.start();
    let (status, answer) =
        json(&writable, "POST", "/admin/api/tasks", Some(r#"{"name":"sync_crm","payload":1,"id":"crm-1"}"#))
            .await?;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let dead = exec.wait_for(&TaskId::new("crm-1")?, Duration::from_secs(10)).await?;
    assert_eq!(dead.state, TaskState::Failed);

    for (method, uri, body) in CHANGES {
        let (status, answer) = json(&read_only, method, uri, *body).await?;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {uri}: {answer}");
        assert_eq!(answer["code"], "read_only", "{method} {uri}: {answer}");
    }
    // Nothing changed: the dead task is still there, dead; no task new-1;
    // the default queue is neither paused nor limited.
    let (status, task) = json(&read_only, "GET", "/admin/api/tasks/crm-1", None).await?;
    assert_eq!((status, task["state"].as_str()), (StatusCode::OK, Some("FAILED")), "{task}");
    let (status, _) = json(&read_only, "GET", "/admin/api/tasks/new-1", None).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, queues) = json(&read_only, "GET", "/admin/api/queues", None).await?;
    assert!(
        queues
            .as_array()
            .is_some_and(|q| q.iter().all(|q| q["paused"] == false && q["limits"]["concurrency"].is_null())),
        "{queues}"
    );
    // The same pause through the writable admin shows in the listing, so
    // the check above could fail.
    assert_eq!(json(&writable, "POST", "/admin/api/queues/default/pause", None).await?.0, StatusCode::OK);
    let (_, queues) = json(&read_only, "GET", "/admin/api/queues", None).await?;
    assert!(queues.as_array().is_some_and(|q| q.iter().any(|q| q["paused"] == true)), "{queues}");
    for uri in
        ["/admin/api/counts", "/admin/api/info", "/admin/api/tasks?state=FAILED", "/admin/openapi.json"]
    {
        assert_eq!(json(&read_only, "GET", uri, None).await?.0, StatusCode::OK, "{uri}");
    }

    // The dashboard: the same tables, no form, a badge; the writable one
    // has the forms (so the check above could fail).
    let (status, _, page) = call(&read_only, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("crm-1") && page.contains("id=\"read-only\""), "{page}");
    assert!(
        !page.contains("method=\"post\"") && !page.contains("data-requeue"),
        "a form that changes something on a read-only page: {page}"
    );
    assert!(page.contains("id=\"find-id\""), "the find box (a GET) stays");
    let (_, _, writable_page) = call(&writable, "GET", "/admin", None).await?;
    assert!(writable_page.contains("method=\"post\"") && !writable_page.contains("id=\"read-only\""));
    let (_, _, task_page) = call(&read_only, "GET", "/admin/tasks/crm-1", None).await?;
    assert!(task_page.contains("crm-1") && !task_page.contains("method=\"post\""), "{task_page}");
    running.shutdown().await?;
    Ok(())
}

#[test]
fn every_change_documents_the_read_only_answer() {
    let doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    let mut changes = 0;
    for (path, item) in &paths {
        for method in ["post", "put", "delete", "patch"] {
            if let Some(op) = item.get(method) {
                changes += 1;
                assert!(op["responses"]["403"].is_object(), "{method} {path} does not list 403");
            }
        }
        assert!(item["get"]["responses"]["403"].is_null(), "GET {path} lists 403");
    }
    assert!(changes >= 15, "only {changes} changing operations in the document");
}

/// The embedding service's own check, here a bearer token.
async fn check_token(request: Request, next: Next) -> Response {
    match request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        Some("Bearer s3cret") => next.run(request).await,
        _ => (StatusCode::UNAUTHORIZED, "who are you?").into_response(),
    }
}

#[tokio::test]
async fn an_authentication_layer_guards_every_route() -> BoxResult {
    let exec = executor("auth-hook", Arc::new(AtomicBool::new(false))).await?;
    let app = Router::new().nest("/admin", admin_router(&exec).layer(middleware::from_fn(check_token)));
    for (method, uri) in
        [("GET", "/admin"), ("GET", "/admin/api/counts"), ("POST", "/admin/api/dead-letter/requeue")]
    {
        let (status, _, body) = call(&app, method, uri, None).await?;
        assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "who are you?"), "{method} {uri}");
    }
    let request = axum::http::Request::builder()
        .uri("/admin/api/counts")
        .header(header::AUTHORIZATION, "Bearer s3cret")
        .body(Body::empty())?;
    assert_eq!(app.oneshot(request).await?.status(), StatusCode::OK);
    Ok(())
}
