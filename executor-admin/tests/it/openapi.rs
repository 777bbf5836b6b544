//! The OpenAPI document and the router agree: every route is documented,
//! every documented operation is routed (probed on the live router).

use std::collections::BTreeSet;

use axum::http::StatusCode;
use executor_core::{Client, MemoryStorage, Namespace};
use reliable_executor_admin::{ApiDoc, admin_router, admin_routes};
use utoipa::OpenApi as _;

use crate::support::{BoxResult, call};

#[tokio::test]
async fn every_route_is_documented_and_every_documented_route_exists() -> BoxResult {
    let doc = serde_json::to_value(ApiDoc::openapi())?;
    let paths = doc["paths"].as_object().ok_or("the document has no paths")?;
    let mut documented = BTreeSet::new();
    for (path, item) in paths {
        for method in item.as_object().ok_or("a path item is not an object")?.keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    let routed: BTreeSet<_> = admin_routes().into_iter().map(|(m, p)| (m.to_owned(), p.to_owned())).collect();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(undocumented.is_empty(), "routes missing from /openapi.json: {undocumented:?}");
    assert!(unrouted.is_empty(), "documented but not in the route table: {unrouted:?}");
    assert_eq!(routed.len(), 33);

    // Probe each documented operation on a real router: it must reach a
    // handler, not the fallback (404 no_route) or 405.
    let app = admin_router(Client::without_name_check(MemoryStorage::new(), Namespace::new("doc")?));
    for (method, path) in &documented {
        let uri = path.replace("{id}", "probe-id").replace("{name}", "probe-name");
        let body = match (method.as_str(), path.as_str()) {
            ("POST", "/api/tasks") => Some(r#"{"name":"x"}"#),
            ("PUT", "/api/queues/{name}/limits") => Some("{}"),
            _ => None,
        };
        let (status, _, text) = call(&app, method, &uri, body).await?;
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
        assert!(!text.contains("\"no_route\""), "{method} {uri} hit the fallback");
    }

    // The served document is the generated one.
    let (status, _, served) = call(&app, "GET", "/openapi.json", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&served)?, doc);
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    for path in ["/api/schedules", "/api/schedules/{name}/pause", "/api/schedules/{name}/resume"] {
        assert!(doc["paths"][path].is_object(), "{path} is not documented");
    }
    assert!(doc["paths"]["/api/schedules/{name}"]["delete"].is_object());
    let history = &doc["paths"]["/api/history"]["get"];
    assert!(history["responses"]["501"].is_object(), "GET /api/history documents 501: {history}");
    assert!(doc["components"]["schemas"]["HistoryView"].is_object());
    for path in ["/api/queues", "/api/queues/{name}/pause", "/api/queues/{name}/resume"] {
        assert!(doc["paths"][path].is_object(), "{path} is not documented");
    }
    let put = &doc["paths"]["/api/queues/{name}/limits"]["put"];
    assert!(put["requestBody"].is_object(), "PUT /api/queues/{{name}}/limits has no body: {put}");
    for status in ["200", "422", "501"] {
        assert!(put["responses"][status].is_object(), "PUT limits does not document {status}");
    }
    let view = &doc["components"]["schemas"]["QueueView"]["properties"];
    for field in
        ["queue", "waiting", "due", "oldest_due", "latency_ms", "paused", "running", "limits", "throttled"]
    {
        assert!(view[field].is_object(), "QueueView has no `{field}`");
    }
    let rate = &doc["components"]["schemas"]["RateLimitView"]["properties"];
    for field in ["starts", "per_ms", "burst"] {
        assert!(rate[field].is_object(), "RateLimitView has no `{field}`");
    }
    let request = &doc["components"]["schemas"]["RateLimitRequest"];
    assert_eq!(request["required"], serde_json::json!(["starts", "per_ms"]), "{request}");
    let task = &doc["components"]["schemas"]["TaskView"]["properties"];
    assert!(task["queue"].is_object() && task["priority"].is_object(), "TaskView has no queue or priority");
    assert!(task["all_attempts"].is_object(), "TaskView has no all_attempts: {task}");
    let attempt = &doc["components"]["schemas"]["AttemptView"]["properties"];
    for field in ["attempt", "worker", "started_at", "ended_at", "duration_ms", "outcome", "error"] {
        assert!(attempt[field].is_object(), "AttemptView has no `{field}`");
    }
    let view = &doc["components"]["schemas"]["ScheduleView"]["properties"];
    for field in
        ["name", "cron", "timezone", "payload", "paused", "next_fire_ms", "last_tick_ms", "last_state"]
    {
        assert!(view[field].is_object(), "ScheduleView has no `{field}`");
    }
    Ok(())
}
