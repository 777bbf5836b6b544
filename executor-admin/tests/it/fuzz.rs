//! The admin API fed malformed input: random methods, paths, query strings
//! and bodies (broken JSON, wrong types, unknown names, odd ids, huge
//! numbers). Every answer is a documented status with a JSON error body;
//! never a 500, never a panic. `PROPTEST_CASES=100000` runs more.

use std::sync::{Arc, atomic::AtomicBool};

use axum::{Router, http::StatusCode};
use proptest::{prelude::*, test_runner::Config};
use reliable_executor_admin::admin_router;

use crate::support::{self, call};

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("order-7".to_owned()),
        Just(String::new()),
        Just("%20".to_owned()),
        Just("%00".to_owned()),
        Just("%FF%FE".to_owned()),
        Just("a%2Fb".to_owned()),
        Just("..".to_owned()),
        "[a-zA-Z0-9_.~-]{1,40}",
        "[a-z]{300}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    let query = "[a-z=&%0-9_-]{0,40}";
    prop_oneof![
        segment().prop_map(|s| format!("/api/tasks/{s}")),
        segment().prop_map(|s| format!("/api/tasks/{s}/cancel")),
        segment().prop_map(|s| format!("/api/tasks/{s}/requeue")),
        segment().prop_map(|s| format!("/tasks/{s}")),
        segment().prop_map(|s| format!("/tasks/{s}/requeue")),
        segment().prop_map(|s| format!("/tasks/{s}/delete")),
        segment().prop_map(|s| format!("/api/schedules/{s}")),
        segment().prop_map(|s| format!("/api/schedules/{s}/pause")),
        segment().prop_map(|s| format!("/api/schedules/{s}/resume")),
        segment().prop_map(|s| format!("/schedules/{s}/pause")),
        segment().prop_map(|s| format!("/schedules/{s}/resume")),
        Just("/api/schedules".to_owned()),
        segment().prop_map(|s| format!("/api/queues/{s}/pause")),
        segment().prop_map(|s| format!("/api/queues/{s}/resume")),
        segment().prop_map(|s| format!("/queues/{s}/pause")),
        segment().prop_map(|s| format!("/queues/{s}/resume")),
        segment().prop_map(|s| format!("/api/queues/{s}/limits")),
        segment().prop_map(|s| format!("/queues/{s}/limits")),
        Just("/api/queues".to_owned()),
        query.prop_map(|q| format!("/api/tasks?{q}")),
        (segment(), "-?[0-9]{0,25}", segment())
            .prop_map(|(s, l, c)| format!("/api/tasks?state={s}&limit={l}&cursor={c}")),
        Just("/api/tasks".to_owned()),
        Just("/api/dead-letter/requeue".to_owned()),
        Just("/api/counts".to_owned()),
        Just("/api/info".to_owned()),
        Just("/".to_owned()),
        segment().prop_map(|s| format!("/{s}")),
    ]
}

fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("-1".to_owned()),
        Just("1e400".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        "\"[a-z ]{0,20}\"",
        "-?[0-9]{1,22}",
    ]
}

fn body() -> impl Strategy<Value = Option<String>> {
    let name = prop_oneof![
        Just("\"echo\"".to_owned()),
        Just("\"sync_crm\"".to_owned()),
        Just("\"nobody\"".to_owned()),
        Just("\"\"".to_owned()),
        json_value(),
    ];
    let id = prop_oneof![
        Just("\"a b\"".to_owned()),
        Just("\"x\"".to_owned()),
        "\"[^\"\\\\]{0,200}\"",
        json_value()
    ];
    prop_oneof![
        Just(None),
        ".{0,200}".prop_map(Some),
        (name, json_value(), id, json_value(), json_value()).prop_map(|(n, p, i, d, idem)| Some(format!(
            r#"{{"name":{n},"payload":{p},"id":{i},"delay_ms":{d},"idempotent":{idem}}}"#
        ))),
    ]
}

proptest! {
    #![proptest_config(Config { cases: 256, ..Config::default() })]

    #[test]
    fn malformed_requests_get_documented_errors(
        method in prop_oneof![Just("GET"), Just("POST"), Just("DELETE"), Just("PUT")],
        path in path(),
        body in body(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let outcome = runtime.block_on(async {
            let exec = support::executor("fuzz", Arc::new(AtomicBool::new(true))).await?;
            let app = Router::new().nest("/admin", admin_router(&exec));
            call(&app, method, &format!("/admin{path}"), body.as_deref()).await
        });
        // A URI the HTTP types refuse never reaches the router; nothing to check.
        let Ok((status, ctype, text)) = outcome else { return Ok(()) };
        prop_assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR, "{} {} -> {}", method, path, text);
        let documented = [200, 201, 303, 400, 404, 405, 409, 413, 415, 422, 503];
        prop_assert!(documented.contains(&status.as_u16()), "{} {} -> {} {}", method, path, status, text);
        if path.starts_with("/api") && status.is_client_error() {
            prop_assert!(ctype.starts_with("application/json"), "{} {} -> {} ({})", method, path, status, ctype);
            let err: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("error body is not JSON: {e}: {text}")))?;
            prop_assert!(err["code"].is_string(), "no stable code in {}", text);
        }
    }
}
