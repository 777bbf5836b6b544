//! What schemathesis found against `/openapi.json` (docs/reliability.md,
//! "Admin API under schemathesis"), kept as plain Rust: every answer is a
//! status the document lists for that operation, with the documented
//! content type, and the documented parameter rules are the server's.

use std::{
    collections::BTreeSet,
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use axum::{Router, http::StatusCode};
use executor_core::{QueueName, RunningExecutor, TaskId, TaskState, id::MAX_ID_LEN, queue::MAX_QUEUE_LEN};
use reliable_executor_admin::{ApiDoc, admin_router};
use serde_json::Value;
use utoipa::OpenApi as _;

use crate::support::{BoxResult, call, corrupt::CorruptStore, executor_on, json};

/// A dead-lettered record that does not parse.
const CORRUPT: &str = "bad-1";

/// An app with a waiting task (`order-7`), a dead-lettered one (`crm-1`)
/// and a record that does not parse ([`CORRUPT`]), its store (to put the
/// record back after a probe deleted it) and its running executor (shut
/// it down at the end).
async fn seeded(namespace: &str) -> BoxResult<(Router, CorruptStore, RunningExecutor)> {
    let store = CorruptStore::default();
    store.hooks().corrupt(CORRUPT, TaskState::Error, "expected value at line 1 column 1");
    let exec = executor_on(store.clone(), namespace, Arc::new(AtomicBool::new(true))).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));
    let running = exec.start();
    for body in [
        r#"{"name":"echo","payload":1,"id":"order-7","delay_ms":600000}"#,
        r#"{"name":"sync_crm","payload":1,"id":"crm-1"}"#,
    ] {
        let (status, answer) = json(&app, "POST", "/admin/api/tasks", Some(body)).await?;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let dead = exec.wait_for(&TaskId::new("crm-1")?, Duration::from_secs(10)).await?;
    assert_eq!(dead.state, TaskState::Failed);
    Ok((app, store, running))
}

/// The responses (status -> content type) the document lists for an operation.
fn documented(doc: &Value, method: &str, path: &str) -> BoxResult<Vec<(u16, Option<String>)>> {
    let responses = doc["paths"][path][method.to_lowercase()]["responses"]
        .as_object()
        .ok_or_else(|| format!("{method} {path} has no responses in the document"))?;
    let mut out = Vec::new();
    for (status, response) in responses {
        let ctype = response["content"].as_object().and_then(|c| c.keys().next().cloned());
        out.push((status.parse()?, ctype));
    }
    Ok(out)
}

#[tokio::test]
async fn every_answer_is_a_documented_status_of_its_operation() -> BoxResult {
    let (app, store, running) = seeded("documented-statuses").await?;
    let doc = serde_json::to_value(ApiDoc::openapi())?;
    let long = "x".repeat(MAX_ID_LEN + 1);
    // Existing, dead-lettered, corrupt, missing, whitespace, control, not UTF-8, too long.
    let ids = ["order-7", "crm-1", CORRUPT, "nobody", "a%20b", "a%01b", "%FF%FE", "%E2%80%A8", long.as_str()];
    // Schedule and queue names: plain, odd, not UTF-8. No schedule exists:
    // these probe 404 and 422; the store has no queue controls: 501 and 422.
    let names = ["nightly", "a%20b", "%40x", "%FF%FE"];
    let queries = [
        "",
        "?state=pending",
        "?state=FAILED&limit=1",
        "?state=",
        "?state=bogus",
        "?state=created&limit=0",
        "?state=created&limit=1001",
        "?state=created&limit=-1",
        "?state=created&cursor=",
        "?state=created&cursor=not-ours",
        "?state=created&name=echo",
        "?state=created&name=",
        "?state=created&name=a%20b",
        "?limit=0",
        "?limit=10001",
        "?limit=%FF",
        "?notice=a&notice=b",
        "?notice=%FF&bad=x",
    ];
    // Limits: none, fine (the store has none: 501), out of range, wrong shape, broken.
    let limit_bodies = [
        None,
        Some("{}"),
        Some(r#"{"concurrency":4,"rate":{"starts":50,"per_ms":1000}}"#),
        Some(r#"{"concurrency":0}"#),
        Some(r#"{"rate":{"starts":5,"per_ms":0}}"#),
        Some(r#"{"rate":{"starts":5}}"#),
        Some(r#"{"concurrency":-1}"#),
        Some(r#"{"limit":3}"#),
        Some("{"),
    ];
    let bodies = [
        None,
        Some("{"),
        Some("[]"),
        Some(r#"{"name":""}"#),
        Some(r#"{"name":"nobody"}"#),
        Some(r#"{"name":"echo","id":"a b"}"#),
        Some(r#"{"name":"echo","id":"order-7"}"#),
        Some(r#"{"name":"echo","id":"order-7","idempotent":true}"#),
        Some(r#"{"name":"echo","delay_ms":18446744073709551615}"#),
        Some(r#"{"name":"echo","delay_ms":-1}"#),
        Some(r#"{"name":"echo","extra":1}"#),
    ];

    let mut probes = 0;
    for (path, item) in doc["paths"].as_object().ok_or("no paths")? {
        for method in item.as_object().ok_or("a path item is not an object")?.keys() {
            let method = method.to_uppercase();
            let allowed = documented(&doc, &method, path)?;
            let uris: Vec<String> = if path.contains("{id}") {
                ids.iter().map(|id| path.replace("{id}", id)).collect()
            } else if path.contains("{name}") {
                names.iter().map(|name| path.replace("{name}", name)).collect()
            } else {
                // axum's `nest` serves the nested router's `/` at the mount
                // itself (`/admin`); `/admin/` is the outer router's 404.
                let path = if path == "/" { "" } else { path.as_str() };
                queries.iter().map(|q| format!("{path}{q}")).collect()
            };
            let sent: &[Option<&str>] = match (method.as_str(), path.as_str()) {
                ("POST", "/api/tasks") => &bodies,
                ("PUT", "/api/queues/{name}/limits") => &limit_bodies,
                _ => &[None],
            };
            for uri in &uris {
                for body in sent {
                    store.hooks().corrupt(CORRUPT, TaskState::Error, "expected value at line 1 column 1");
                    let (status, ctype, text) = call(&app, &method, &format!("/admin{uri}"), *body).await?;
                    probes += 1;
                    let what = format!("{method} {uri} {body:?} -> {status} {ctype}: {text:.200}");
                    let Some((_, documented_ctype)) = allowed.iter().find(|(s, _)| *s == status.as_u16())
                    else {
                        panic!("undocumented status: {what}; documented: {allowed:?}");
                    };
                    if let Some(expected) = documented_ctype {
                        assert!(ctype.starts_with(expected.as_str()), "content type: {what}");
                    }
                    if ctype.starts_with("application/json") && status.is_client_error() {
                        let err: Value = serde_json::from_str(&text)?;
                        assert!(err["code"].is_string() && err["message"].is_string(), "{what}");
                    }
                }
            }
        }
    }
    assert!(probes >= 300, "only {probes} probes");
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn schemathesis_findings_stay_fixed() -> BoxResult {
    let (app, _, running) = seeded("schemathesis-findings").await?;

    // ST103: a submit without `Content-Type: application/json` answered an
    // undocumented 415.
    let (status, ctype, text) = call(&app, "POST", "/admin/api/tasks", None).await?;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{text}");
    assert!(ctype.starts_with("application/json") && text.contains("unsupported_media_type"), "{text}");

    // ST103: cancel and requeue of an id with a control character answered
    // an undocumented 422.
    for action in ["cancel", "requeue", "run-now"] {
        let (status, err) = json(&app, "POST", &format!("/admin/api/tasks/W%1Dt4/{action}"), None).await?;
        assert_eq!((status, err["code"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid")));
    }

    // The dashboard's task page: an invalid id is a 422 page; a path that
    // is not UTF-8 was axum's plain-text 400.
    for id in ["a%01b", "%FF"] {
        let (status, ctype, _) = call(&app, "GET", &format!("/admin/tasks/{id}"), None).await?;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{id}");
        assert!(ctype.starts_with("text/html"), "{id}: {ctype}");
    }
    // Its forms always go back to the overview with a notice.
    for action in ["cancel", "requeue", "run-now"] {
        let (status, _, _) = call(&app, "POST", &format!("/admin/tasks/%FF/{action}"), None).await?;
        assert_eq!(status, StatusCode::SEE_OTHER, "{action}");
    }
    // A repeated notice key was a plain-text 400; it is only decoration.
    let (status, ctype, _) = call(&app, "GET", "/admin?notice=a&notice=b", None).await?;
    assert_eq!((status, ctype.starts_with("text/html")), (StatusCode::OK, true));
    running.shutdown().await?;
    Ok(())
}

/// The `[^...]` class of the documented id pattern, as code point ranges.
fn excluded_ranges(pattern: &str) -> BoxResult<Vec<(u32, u32)>> {
    let class = pattern
        .strip_prefix("^[^")
        .and_then(|p| p.strip_suffix("]+$"))
        .ok_or_else(|| format!("unexpected pattern shape: {pattern}"))?;
    let mut points = Vec::new();
    let mut rest = class;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('-') {
            points.push(None);
            rest = r;
            continue;
        }
        let hex = rest.strip_prefix("\\u").ok_or_else(|| format!("unexpected token at {rest}"))?;
        let (digits, r) = hex.split_at(4);
        points.push(Some(u32::from_str_radix(digits, 16)?));
        rest = r;
    }
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let start = points[i].ok_or("a range without a start")?;
        if points.get(i + 1) == Some(&None) {
            let end = points.get(i + 2).copied().flatten().ok_or("a range without an end")?;
            ranges.push((start, end));
            i += 3;
        } else {
            ranges.push((start, start));
            i += 1;
        }
    }
    Ok(ranges)
}

#[test]
fn documented_parameter_rules_are_the_servers() -> BoxResult {
    let doc = serde_json::to_value(ApiDoc::openapi())?;

    // Every id schema (paths and the submit body) is TaskId's rule: the
    // pattern excludes exactly the characters TaskId::new refuses.
    let mut id_schemas = vec![doc["components"]["schemas"]["SubmitRequest"]["properties"]["id"].clone()];
    for (path, item) in doc["paths"].as_object().ok_or("no paths")? {
        for (method, op) in item.as_object().ok_or("bad path item")? {
            // The dashboard's forms take any id and answer with a notice.
            if method == "post" && path.starts_with("/tasks/") {
                continue;
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["name"] == "id" {
                    id_schemas.push(p["schema"].clone());
                }
            }
        }
    }
    assert_eq!(id_schemas.len(), 8, "{id_schemas:?}");
    let patterns: BTreeSet<_> = id_schemas.iter().map(|s| s["pattern"].as_str()).collect();
    assert_eq!(patterns.len(), 1, "id patterns differ: {patterns:?}");
    for s in &id_schemas {
        assert_eq!((s["minLength"].as_u64(), s["maxLength"].as_u64()), (Some(1), Some(MAX_ID_LEN as u64)));
    }
    let pattern = patterns.into_iter().next().flatten().ok_or("id schema without a pattern")?;
    let excluded = excluded_ranges(pattern)?;
    for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
        let documented_ok = !excluded.iter().any(|&(lo, hi)| (lo..=hi).contains(&u32::from(c)));
        assert_eq!(documented_ok, TaskId::new(c.to_string()).is_ok(), "U+{:04X}", u32::from(c));
    }

    // `GET /api/tasks`: `state` is required and one of the states; `limit` 1..=1000.
    let params = doc["paths"]["/api/tasks"]["get"]["parameters"].as_array().ok_or("no list params")?;
    let param = |name: &str| params.iter().find(|p| p["name"] == name).cloned().unwrap_or_default();
    assert_eq!(param("state")["required"], true);
    let states: Vec<_> = TaskState::ALL.iter().map(|s| Value::from(s.as_str())).collect();
    assert_eq!(param("state")["schema"]["enum"], Value::from(states));
    assert_eq!(
        (param("limit")["schema"]["minimum"].as_u64(), param("limit")["schema"]["maximum"].as_u64()),
        (Some(1), Some(1000))
    );
    let requeue = &doc["paths"]["/api/dead-letter/requeue"]["post"]["parameters"][0]["schema"];
    assert_eq!((requeue["minimum"].as_u64(), requeue["maximum"].as_u64()), (Some(1), Some(10_000)));

    // The queue name of the API's pause, resume and limits is QueueName's rule.
    for (action, method) in [("pause", "post"), ("resume", "post"), ("limits", "put")] {
        let path = format!("/api/queues/{{name}}/{action}");
        let s = &doc["paths"][path.as_str()][method]["parameters"][0]["schema"];
        assert_eq!((s["minLength"].as_u64(), s["maxLength"].as_u64()), (Some(1), Some(MAX_QUEUE_LEN as u64)));
        let class = s["pattern"]
            .as_str()
            .and_then(|p| p.strip_prefix("^[")?.strip_suffix("]+$"))
            .ok_or_else(|| format!("unexpected queue name pattern: {s}"))?;
        let chars: Vec<char> = class.chars().collect();
        let allowed = |c: char| {
            let mut i = 0;
            while i < chars.len() {
                if i + 2 < chars.len() && chars[i + 1] == '-' {
                    if (chars[i]..=chars[i + 2]).contains(&c) {
                        return true;
                    }
                    i += 3;
                } else {
                    if chars[i] == c {
                        return true;
                    }
                    i += 1;
                }
            }
            false
        };
        for c in (0..=0x2FF).filter_map(char::from_u32) {
            assert_eq!(allowed(c), QueueName::new(c.to_string()).is_ok(), "U+{:04X} in {path}", u32::from(c));
        }
    }
    Ok(())
}
