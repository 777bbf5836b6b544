//! The JSON admin API on MemoryStorage: every route, and every error code
//! the docs promise (404, 409, 413, 415, 422, 400), never a 500.

use std::{
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use axum::{Router, http::StatusCode};
use executor_core::{Client, MemoryStorage, Namespace, TaskState};
use reliable_executor_admin::admin_router;
use serde_json::{Value, json};

use crate::support::{BoxResult, call, eventually, executor, json};

fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or("<no code>")
}

async fn state_of(app: &Router, id: &str) -> BoxResult<String> {
    let (status, task) = json(app, "GET", &format!("/api/tasks/{id}"), None).await?;
    assert_eq!(status, StatusCode::OK, "{task}");
    Ok(task["state"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn submit_get_list_cancel_counts_info() -> BoxResult {
    let broken = Arc::new(AtomicBool::new(true));
    let exec = executor("api-basics", broken).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));

    // Submit with options: a delayed task with a business id, then an idempotent repeat.
    let body = r#"{"name":"echo","payload":{"n":1},"id":"order-7","delay_ms":600000}"#;
    let (status, sub) = json(&app, "POST", "/admin/api/tasks", Some(body)).await?;
    assert_eq!(
        (status, sub["id"].as_str(), sub["outcome"].as_str()),
        (StatusCode::CREATED, Some("order-7"), Some("created"))
    );
    let (status, err) = json(&app, "POST", "/admin/api/tasks", Some(body)).await?;
    assert_eq!((status, code(&err)), (StatusCode::CONFLICT, "duplicate_id"), "{err}");
    let idem = r#"{"name":"echo","payload":{"n":2},"id":"order-7","idempotent":true}"#;
    let (status, sub) = json(&app, "POST", "/admin/api/tasks", Some(idem)).await?;
    assert_eq!((status, sub["outcome"].as_str()), (StatusCode::OK, Some("existing")));

    let (status, task) = json(&app, "GET", "/admin/api/tasks/order-7", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((task["state"].as_str(), task["name"].as_str()), (Some("CREATED"), Some("echo")));
    assert_eq!(task["payload"], json!({"n": 1}));
    assert!(task["due_at"].as_u64() > task["created_at"].as_u64());

    // Plain submits (Client::submit_json) to page through.
    for n in 0..5 {
        let b = format!(r#"{{"name":"echo","payload":{{"n":{n}}},"delay_ms":600000,"id":"page-{n}"}}"#);
        let (status, _) = json(&app, "POST", "/admin/api/tasks", Some(&b)).await?;
        assert_eq!(status, StatusCode::CREATED);
    }
    let mut seen = Vec::new();
    let mut uri = "/admin/api/tasks?state=created&limit=2".to_owned();
    loop {
        let (status, page) = json(&app, "GET", &uri, None).await?;
        assert_eq!(status, StatusCode::OK, "{page}");
        let tasks = page["tasks"].as_array().ok_or("no tasks array")?;
        assert!(tasks.len() <= 2);
        seen.extend(tasks.iter().filter_map(|t| t["id"].as_str().map(str::to_owned)));
        match page["next"].as_str() {
            Some(next) => uri = format!("/admin/api/tasks?state=CREATED&limit=2&cursor={next}"),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["order-7", "page-0", "page-1", "page-2", "page-3", "page-4"]);

    // Cancel a waiting task; a second cancel is an illegal transition.
    let (status, c) = json(&app, "POST", "/admin/api/tasks/page-0/cancel", None).await?;
    assert_eq!((status, c["outcome"].as_str()), (StatusCode::OK, Some("cancelled")));
    let (status, err) = json(&app, "POST", "/admin/api/tasks/page-0/cancel", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::CONFLICT, "illegal_transition"), "{err}");
    let (status, err) = json(&app, "POST", "/admin/api/tasks/page-1/requeue", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::CONFLICT, "illegal_transition"), "{err}");

    let (status, counts) = json(&app, "GET", "/admin/api/counts", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (counts["counts"]["CREATED"].as_u64(), counts["counts"]["CANCELLED"].as_u64()),
        (Some(5), Some(1))
    );
    assert_eq!((counts["counts"]["FAILED"].as_u64(), counts["total"].as_u64()), (Some(0), Some(6)));

    // Info: the worker and its handlers; the leader once the executor runs.
    let running = exec.start();
    let app2 = app.clone();
    eventually("a leader", Duration::from_secs(5), || {
        let app = app2.clone();
        async move { Ok(!json(&app, "GET", "/admin/api/info", None).await?.1["leader"].is_null()) }
    })
    .await?;
    let (_, info) = json(&app, "GET", "/admin/api/info", None).await?;
    assert_eq!(info["namespace"].as_str(), Some("api-basics"));
    assert_eq!(info["worker"]["id"].as_str(), Some(exec.worker_id().as_str()));
    assert_eq!(info["worker"]["is_leader"].as_bool(), Some(true));
    assert_eq!(info["worker"]["handlers"], json!(["echo", "import_feed", "sync_crm"]));
    // Every announced worker: this one, with the same handlers; one set.
    let app3 = app.clone();
    eventually("the worker's announcement", Duration::from_secs(5), || {
        let app = app3.clone();
        async move {
            Ok(json(&app, "GET", "/admin/api/info", None).await?.1["workers"]
                .as_array()
                .is_some_and(|w| !w.is_empty()))
        }
    })
    .await?;
    let (_, info) = json(&app, "GET", "/admin/api/info", None).await?;
    assert_eq!(info["workers"][0]["id"].as_str(), Some(exec.worker_id().as_str()));
    assert_eq!(info["workers"][0]["handlers"], json!(["echo", "import_feed", "sync_crm"]));
    assert_eq!(info["handler_sets"].as_u64(), Some(1));

    // Run now: order-7, due in ten minutes, runs at once on the running
    // executor; a finished task is refused, an unknown one is not found.
    let (status, ran) = json(&app, "POST", "/admin/api/tasks/order-7/run-now", None).await?;
    assert_eq!(status, StatusCode::OK, "{ran}");
    assert_eq!(ran["id"].as_str(), Some("order-7"));
    let (_, page1) = json(&app, "GET", "/admin/api/tasks/page-1", None).await?;
    assert!(ran["due_at"].as_u64() < page1["due_at"].as_u64(), "{ran} is not due before {page1}");
    let app4 = app.clone();
    eventually("order-7 to complete", Duration::from_secs(5), || {
        let app = app4.clone();
        async move { Ok(json(&app, "GET", "/admin/api/tasks/order-7", None).await?.1["state"] == "COMPLETED") }
    })
    .await?;
    let (status, err) = json(&app, "POST", "/admin/api/tasks/order-7/run-now", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::CONFLICT, "illegal_transition"), "{err}");
    let (status, err) = json(&app, "POST", "/admin/api/tasks/nobody/run-now", None).await?;
    assert_eq!(status, StatusCode::NOT_FOUND, "{err}");
    let (_, page1) = json(&app, "GET", "/admin/api/tasks/page-1", None).await?;
    assert_eq!(page1["state"].as_str(), Some("CREATED"), "the other delayed tasks still wait");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn requeue_one_and_all_from_the_dead_letter() -> BoxResult {
    let broken = Arc::new(AtomicBool::new(true));
    let exec = executor("api-dead-letter", Arc::clone(&broken)).await?;
    let app = admin_router(&exec);
    let running = exec.start();
    for n in 0..7 {
        let b = format!(r#"{{"name":"sync_crm","payload":{n},"id":"crm-{n}"}}"#);
        assert_eq!(json(&app, "POST", "/api/tasks", Some(&b)).await?.0, StatusCode::CREATED);
    }
    for n in 0..7 {
        let id = format!("crm-{n}");
        let done = exec.wait_for(&executor_core::TaskId::new(&id)?, Duration::from_secs(5)).await?;
        assert_eq!(done.state, TaskState::Failed);
    }
    let (_, task) = json(&app, "GET", "/api/tasks/crm-0", None).await?;
    assert_eq!(task["dead_letter"].as_bool(), Some(true));
    assert_eq!(task["last_error"].as_str(), Some("CRM rejected customer 0: <field> `email` missing"));
    let attempts = task["all_attempts"].as_array().map(Vec::len);
    assert_eq!((attempts, task["all_attempts"][0]["outcome"].as_str()), (Some(1), Some("dead")), "{task}");

    broken.store(false, std::sync::atomic::Ordering::SeqCst);
    let (status, r) = json(&app, "POST", "/api/tasks/crm-0/requeue", None).await?;
    assert_eq!((status, r["state"].as_str()), (StatusCode::OK, Some("PENDING")));
    exec.wait_for(&executor_core::TaskId::new("crm-0")?, Duration::from_secs(5)).await?;
    assert_eq!(state_of(&app, "crm-0").await?, "COMPLETED");
    // The requeue kept the attempt that dead-lettered it.
    let (_, task) = json(&app, "GET", "/api/tasks/crm-0", None).await?;
    let outcomes: Vec<&str> =
        task["all_attempts"].as_array().into_iter().flatten().filter_map(|a| a["outcome"].as_str()).collect();
    assert_eq!(outcomes, ["dead", "completed"], "{task}");
    assert_eq!(
        task["all_attempts"][0]["error"].as_str(),
        Some("CRM rejected customer 0: <field> `email` missing"),
        "{task}"
    );

    // Bounded: 4 of the 6 left, then the rest.
    let (status, r) = json(&app, "POST", "/api/dead-letter/requeue?limit=4", None).await?;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!((r["requeued"].as_u64(), r["more"].as_bool()), (Some(4), Some(true)), "{r}");
    let (_, r) = json(&app, "POST", "/api/dead-letter/requeue", None).await?;
    assert_eq!((r["requeued"].as_u64(), r["more"].as_bool()), (Some(2), Some(false)), "{r}");
    let (status, err) = json(&app, "POST", "/api/dead-letter/requeue?limit=0", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"));
    let app2 = app.clone();
    eventually("every requeued task completed", Duration::from_secs(5), || {
        let app = app2.clone();
        async move {
            Ok(json(&app, "GET", "/api/counts", None).await?.1["counts"]["COMPLETED"].as_u64() == Some(7))
        }
    })
    .await?;
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn bad_input_gets_the_documented_codes() -> BoxResult {
    let exec = executor("api-errors", Arc::new(AtomicBool::new(true))).await?;
    let app = admin_router(&exec);
    let cases: &[(&str, &str, Option<&str>, StatusCode, &str)] = &[
        ("GET", "/api/tasks/nope", None, StatusCode::NOT_FOUND, "not_found"),
        ("POST", "/api/tasks/nope/cancel", None, StatusCode::NOT_FOUND, "not_found"),
        ("POST", "/api/tasks/nope/requeue", None, StatusCode::NOT_FOUND, "not_found"),
        ("GET", "/api/nothing-here", None, StatusCode::NOT_FOUND, "no_route"),
        ("DELETE", "/api/tasks", None, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        (
            "POST",
            "/api/tasks",
            Some(r#"{"name":"no_such_handler"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_task",
        ),
        (
            "POST",
            "/api/tasks",
            Some(r#"{"name":"echo","id":"has space"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
        ),
        (
            "POST",
            "/api/tasks",
            Some(r#"{"name":"echo","colour":"red"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
        ),
        ("POST", "/api/tasks", Some(r#"{"payload":1}"#), StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
        ("POST", "/api/tasks", Some(r#"{"name":"echo","#), StatusCode::BAD_REQUEST, "malformed_json"),
        ("POST", "/api/tasks", Some("not json at all"), StatusCode::BAD_REQUEST, "malformed_json"),
        ("GET", "/api/tasks?state=LOST", None, StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
        ("GET", "/api/tasks", None, StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
        ("GET", "/api/tasks?state=FAILED&limit=0", None, StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
        ("GET", "/api/tasks?state=FAILED&limit=many", None, StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
        ("GET", "/api/tasks?state=FAILED&cursor=%21%21", None, StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
    ];
    for (method, uri, body, want_status, want_code) in cases {
        let (status, err) = json(&app, method, uri, *body).await?;
        assert_eq!((status, code(&err)), (*want_status, *want_code), "{method} {uri}: {err}");
        assert!(!err["message"].as_str().unwrap_or_default().is_empty(), "{method} {uri}: no message");
    }

    // JSON without its content type.
    let req = axum::http::Request::post("/api/tasks").body(axum::body::Body::from(r#"{"name":"echo"}"#))?;
    let resp = tower::ServiceExt::oneshot(app.clone(), req).await?;
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // A body over the body limit, and a payload over the client's limit but under the body limit.
    let huge = format!(
        r#"{{"name":"echo","payload":"{}"}}"#,
        "x".repeat(reliable_executor_admin::DEFAULT_BODY_LIMIT)
    );
    let (status, err) = json(&app, "POST", "/api/tasks", Some(&huge)).await?;
    assert_eq!((status, code(&err)), (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"), "{err}");
    let big = format!(
        r#"{{"name":"echo","payload":"{}"}}"#,
        "x".repeat(executor_core::client::DEFAULT_MAX_PAYLOAD)
    );
    let (status, err) = json(&app, "POST", "/api/tasks", Some(&big)).await?;
    assert_eq!((status, code(&err)), (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"), "{err}");
    assert_eq!(json(&app, "GET", "/api/counts", None).await?.1["total"].as_u64(), Some(0));
    Ok(())
}

#[tokio::test]
async fn a_producer_only_client_has_no_worker_info() -> BoxResult {
    let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("producer")?);
    let app = admin_router(client);
    let (status, sub) =
        json(&app, "POST", "/api/tasks", Some(r#"{"name":"runs_elsewhere","payload":[1,2]}"#)).await?;
    assert_eq!(status, StatusCode::CREATED, "{sub}");
    let (_, info) = json(&app, "GET", "/api/info", None).await?;
    assert!(info["worker"].is_null() && info["leader"].is_null(), "{info}");
    Ok(())
}

#[tokio::test]
async fn the_dashboard_escapes_user_data() -> BoxResult {
    let exec = executor("html-escape", Arc::new(AtomicBool::new(true))).await?;
    let app = Router::new().nest("/ops", admin_router(&exec));
    let running = exec.start();
    let evil = "<img/src=x/onerror=alert(1)>";
    let b = json!({"name": "sync_crm", "payload": 5, "id": evil}).to_string();
    assert_eq!(json(&app, "POST", "/ops/api/tasks", Some(&b)).await?.0, StatusCode::CREATED);
    exec.wait_for(&executor_core::TaskId::new(evil)?, Duration::from_secs(5)).await?;
    let b = json!({"name": "echo", "payload": {"note": "</pre><script>alert(2)</script>"}, "id": "xss-2", "delay_ms": 60000});
    assert_eq!(json(&app, "POST", "/ops/api/tasks", Some(&b.to_string())).await?.0, StatusCode::CREATED);

    let (status, ctype, html) = call(&app, "GET", "/ops", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(ctype.starts_with("text/html"), "{ctype}");
    assert!(!html.contains("<img/src"), "unescaped id in the dashboard");
    assert!(html.contains("&lt;img/src=x/onerror=alert(1)&gt;"));
    assert!(html.contains("CRM rejected customer 5: &lt;field&gt; `email` missing"));
    assert!(
        html.contains(r#"action="/ops/tasks/%3Cimg%2Fsrc%3Dx%2Fonerror%3Dalert%281%29%3E/requeue""#),
        "{html}"
    );

    let (status, _, page) = call(&app, "GET", "/ops/tasks/xss-2", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("<script>alert(2)") && page.contains("&lt;/pre&gt;&lt;script&gt;alert(2)"));
    let (status, _, page) =
        call(&app, "GET", "/ops/tasks/%3Cimg%2Fsrc%3Dx%2Fonerror%3Dalert%281%29%3E", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("1 of 1") && !page.contains("<img/src"));
    let (status, _, page) = call(&app, "GET", "/ops/tasks/missing", None).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(page.contains("not_found"));

    // The form posts redirect back with a notice.
    let (status, _, _) = call(&app, "POST", "/ops/tasks/xss-2/cancel", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, task) = json(&app, "GET", "/ops/api/tasks/xss-2", None).await?;
    assert_eq!(task["state"].as_str(), Some("CANCELLED"));
    running.shutdown().await?;
    Ok(())
}
