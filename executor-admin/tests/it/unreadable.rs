//! Issue 12 item 10, the admin side: one record that does not parse no
//! longer breaks its state. The list, the dashboard and requeue-all work
//! around it and name it; `DELETE /api/tasks/{id}` removes it; reading it
//! answers a clear `corrupt_record` error.

use std::{
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    http::{Request, StatusCode, header},
};
use executor_core::{TaskId, TaskState};
use reliable_executor_admin::{ApiDoc, admin_router};
use serde_json::{Value, json};
use tower::ServiceExt as _;
use utoipa::OpenApi as _;

use crate::support::{BoxResult, call, corrupt::CorruptStore, executor_on, json};

const REASON: &str = "field `state`: unknown variant `PAUSED`";

/// An app under `/admin` over a [`CorruptStore`] whose dead letter holds
/// `crm-0` .. `crm-3` (`FAILED`, readable), `bad-1` (`FAILED`) and `bad-2`
/// (`ERROR`) that do not parse, beside a waiting `order-7`. The executor
/// is stopped once the tasks failed, so nothing moves on its own after.
async fn seeded(namespace: &str) -> BoxResult<(Router, CorruptStore)> {
    let store = CorruptStore::default();
    let exec = executor_on(store.clone(), namespace, Arc::new(AtomicBool::new(true))).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));
    let running = exec.start();
    let mut bodies = vec![r#"{"name":"echo","payload":1,"id":"order-7","delay_ms":600000}"#.to_owned()];
    bodies.extend((0..4).map(|n| format!(r#"{{"name":"sync_crm","payload":{n},"id":"crm-{n}"}}"#)));
    for body in &bodies {
        let (status, answer) = json(&app, "POST", "/admin/api/tasks", Some(body)).await?;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    for n in 0..4 {
        let done = exec.wait_for(&TaskId::new(format!("crm-{n}"))?, Duration::from_secs(5)).await?;
        assert_eq!(done.state, TaskState::Failed);
    }
    running.shutdown().await?;
    store.hooks().corrupt("bad-1", TaskState::Failed, REASON);
    store.hooks().corrupt("bad-2", TaskState::Error, "expected value at line 1 column 1");
    Ok((app, store))
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array().into_iter().flatten().filter_map(|t| t["id"].as_str()).collect()
}

/// A form post: the status and where it redirects to.
async fn post_form(app: &Router, uri: &str) -> BoxResult<(StatusCode, String)> {
    let resp = app.clone().oneshot(Request::post(uri).body(Body::empty())?).await?;
    let location = resp.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("");
    Ok((resp.status(), location.to_owned()))
}

#[tokio::test]
async fn a_page_lists_its_readable_tasks_and_names_the_unreadable_ones() -> BoxResult {
    let (app, _store) = seeded("unreadable-list").await?;

    let (status, page) = json(&app, "GET", "/admin/api/tasks?state=FAILED", None).await?;
    assert_eq!(status, StatusCode::OK, "{page}");
    let mut tasks = ids(&page["tasks"]);
    tasks.sort_unstable();
    assert_eq!(tasks, ["crm-0", "crm-1", "crm-2", "crm-3"]);
    assert_eq!(page["unreadable"], json!([{"id": "bad-1", "state": "FAILED", "reason": REASON}]));

    let (status, page) = json(&app, "GET", "/admin/api/tasks?state=error", None).await?;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!((ids(&page["tasks"]).len(), ids(&page["unreadable"])), (0, vec!["bad-2"]));

    let (_, page) = json(&app, "GET", "/admin/api/tasks?state=CREATED", None).await?;
    assert_eq!((ids(&page["tasks"]), &page["unreadable"]), (vec!["order-7"], &json!([])));
    Ok(())
}

#[tokio::test]
async fn a_corrupt_record_reads_as_a_clear_error_and_deletes() -> BoxResult {
    let (app, _store) = seeded("unreadable-delete").await?;

    let (status, err) = json(&app, "GET", "/admin/api/tasks/bad-1", None).await?;
    assert_eq!((status, err["code"].as_str()), (StatusCode::INTERNAL_SERVER_ERROR, Some("corrupt_record")));
    let message = err["message"].as_str().unwrap_or_default();
    assert!(message.contains(REASON) && message.contains("DELETE"), "{message}");

    let (status, gone) = json(&app, "DELETE", "/admin/api/tasks/bad-1", None).await?;
    assert_eq!(status, StatusCode::OK, "{gone}");
    assert_eq!(gone, json!({"id": "bad-1", "deleted": true}));
    for (method, uri) in [("DELETE", "/admin/api/tasks/bad-1"), ("GET", "/admin/api/tasks/bad-1")] {
        let (status, err) = json(&app, method, uri, None).await?;
        assert_eq!((status, err["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{method}");
    }
    let (_, page) = json(&app, "GET", "/admin/api/tasks?state=FAILED", None).await?;
    assert_eq!(page["unreadable"], json!([]));

    // Any state, readable too: a waiting task and a dead-lettered one.
    for id in ["order-7", "crm-0"] {
        let (status, _) = json(&app, "DELETE", &format!("/admin/api/tasks/{id}"), None).await?;
        assert_eq!(status, StatusCode::OK, "{id}");
        let (status, _) = json(&app, "GET", &format!("/admin/api/tasks/{id}"), None).await?;
        assert_eq!(status, StatusCode::NOT_FOUND, "{id}");
    }
    let (_, counts) = json(&app, "GET", "/admin/api/counts", None).await?;
    assert_eq!((counts["total"].as_u64(), counts["dead_letter"].as_u64()), (Some(4), Some(4)), "{counts}");

    let (status, err) = json(&app, "DELETE", "/admin/api/tasks/a%20b", None).await?;
    assert_eq!((status, err["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid")));
    Ok(())
}

#[tokio::test]
async fn requeue_all_requeues_the_readable_and_reports_the_rest() -> BoxResult {
    let (app, store) = seeded("unreadable-requeue-all").await?;
    store.hooks().refuse_requeue("crm-1", false);
    store.hooks().refuse_requeue("crm-2", true);

    let (status, r) = json(&app, "POST", "/admin/api/dead-letter/requeue", None).await?;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!(
        (r["requeued"].as_u64(), r["more"].as_bool(), &r["interrupted"]),
        (Some(2), Some(false), &Value::Null)
    );
    let mut failed: Vec<_> = r["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["id"].as_str(),
                e["code"].as_str(),
                e["message"].as_str().is_some_and(|m| m.contains("refused")),
            )
        })
        .collect();
    failed.sort_unstable();
    assert_eq!(
        failed,
        [(Some("crm-1"), Some("store_unavailable"), true), (Some("crm-2"), Some("store_unavailable"), true)],
        "{r}"
    );
    assert_eq!(
        r["unreadable"],
        json!([
            {"id": "bad-1", "state": "FAILED", "reason": REASON},
            {"id": "bad-2", "state": "ERROR", "reason": "expected value at line 1 column 1"},
        ])
    );
    for (id, state) in [("crm-0", "PENDING"), ("crm-3", "PENDING"), ("crm-1", "FAILED"), ("crm-2", "FAILED")]
    {
        let (_, task) = json(&app, "GET", &format!("/admin/api/tasks/{id}"), None).await?;
        assert_eq!(task["state"].as_str(), Some(state), "{id}");
    }
    Ok(())
}

#[tokio::test]
async fn requeue_all_stops_and_says_so_when_the_store_keeps_failing() -> BoxResult {
    let (app, store) = seeded("unreadable-requeue-down").await?;
    for n in 0..4 {
        store.hooks().refuse_requeue(&format!("crm-{n}"), true);
    }
    let (status, r) = json(&app, "POST", "/admin/api/dead-letter/requeue", None).await?;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!((r["requeued"].as_u64(), r["more"].as_bool()), (Some(0), Some(true)), "{r}");
    assert_eq!(r["errors"].as_array().map(Vec::len), Some(3), "stops at the third failure in a row: {r}");
    assert_eq!(r["interrupted"]["code"].as_str(), Some("store_unavailable"), "{r}");
    assert_eq!(ids(&r["unreadable"]), ["bad-1"], "ERROR was not reached: {r}");
    Ok(())
}

#[tokio::test]
async fn the_dashboard_shows_unreadable_records_with_a_delete_button() -> BoxResult {
    let (app, store) = seeded("unreadable-dashboard").await?;

    let (status, ctype, html) = call(&app, "GET", "/admin", None).await?;
    assert_eq!((status, ctype.starts_with("text/html")), (StatusCode::OK, true), "{html}");
    assert!(html.contains(r#"<table id="unreadable">"#), "{html}");
    assert!(
        html.contains(r#"<tr data-unreadable="bad-1">"#) && html.contains(r#"<tr data-unreadable="bad-2">"#)
    );
    assert!(html.contains("field `state`: unknown variant `PAUSED`"), "{html}");
    assert!(html.contains(r#"action="/admin/tasks/bad-1/delete""#), "{html}");
    // The readable part of the dead letter is still there.
    assert_eq!(html.matches(r#"<tr data-task="crm-"#).count(), 4, "{html}");

    // The record's own page: the reason and the way out, not a panic.
    let (status, ctype, page) = call(&app, "GET", "/admin/tasks/bad-1", None).await?;
    assert_eq!((status, ctype.starts_with("text/html")), (StatusCode::INTERNAL_SERVER_ERROR, true));
    assert!(page.contains("corrupt_record") && page.contains("unknown variant `PAUSED`"), "{page}");
    assert!(page.contains(r#"action="/admin/tasks/bad-1/delete""#), "{page}");

    let (status, location) = post_form(&app, "/admin/tasks/bad-1/delete").await?;
    assert_eq!((status, location.as_str()), (StatusCode::SEE_OTHER, "/admin?notice=Deleted%20bad-1."));
    let (status, location) = post_form(&app, "/admin/tasks/bad-1/delete").await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(location.starts_with("/admin?bad=") && location.contains("not%20found"), "{location}");
    let (_, _, html) = call(&app, "GET", "/admin", None).await?;
    assert!(!html.contains(r#"data-unreadable="bad-1""#) && html.contains(r#"data-unreadable="bad-2""#));

    // A readable task's page has a Delete button as well.
    let (_, _, page) = call(&app, "GET", "/admin/tasks/crm-3", None).await?;
    assert!(page.contains(r#"action="/admin/tasks/crm-3/delete""#), "{page}");

    // Requeue all: the readable tasks go, the notice names what did not.
    store.hooks().refuse_requeue("crm-1", false);
    let (status, location) = post_form(&app, "/admin/dead-letter/requeue").await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let notice = percent_encoding::percent_decode_str(&location).decode_utf8_lossy();
    assert!(notice.starts_with("/admin?bad="), "{notice}");
    assert!(notice.contains("Requeued 3 tasks") && notice.contains("crm-1"), "{notice}");
    assert!(notice.contains("1 unreadable record"), "{notice}");
    Ok(())
}

#[test]
fn the_openapi_document_describes_unreadable_records_and_delete() -> BoxResult {
    let doc = serde_json::to_value(ApiDoc::openapi())?;
    let schemas = &doc["components"]["schemas"];
    for schema in ["PageView", "RequeueAllResponse"] {
        let unreadable = &schemas[schema]["properties"]["unreadable"];
        assert_eq!(unreadable["items"]["$ref"], "#/components/schemas/UnreadableView", "{schema}");
    }
    assert!(schemas["RequeueAllResponse"]["properties"]["interrupted"].is_object());
    assert!(schemas["UnreadableView"]["properties"]["reason"].is_object());
    let responses = &doc["paths"]["/api/tasks/{id}"]["delete"]["responses"];
    for status in ["200", "404", "422", "503"] {
        assert!(responses[status].is_object(), "DELETE /api/tasks/{{id}} does not document {status}");
    }
    let get = &doc["paths"]["/api/tasks/{id}"]["get"]["responses"]["500"]["description"];
    assert!(get.as_str().is_some_and(|d| d.contains("does not parse")), "{get}");
    Ok(())
}
