//! Cron schedules through the admin API and the dashboard's forms, on
//! MemoryStorage: list, pause, resume, remove, 404 for an unknown name,
//! and `501 unsupported` from a store that keeps no schedules.

use std::{
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use axum::{Router, http::StatusCode};
use executor_core::{Client, MemoryStorage, Namespace, schedule::Schedule};
use reliable_executor_admin::admin_router;
use serde_json::{Value, json};

use crate::support::{BoxResult, call, eventually, executor, json, no_schedules::NoSchedules};

fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or("<no code>")
}

async fn listed(app: &Router) -> BoxResult<Vec<Value>> {
    let (status, list) = json(app, "GET", "/admin/api/schedules", None).await?;
    assert_eq!(status, StatusCode::OK, "{list}");
    Ok(list.as_array().ok_or("the list is not an array")?.clone())
}

#[tokio::test]
async fn list_pause_resume_delete() -> BoxResult {
    let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("schedules-api")?);
    client
        .schedules()
        .put(
            Schedule::new("nightly", "report", "0 0 2 * * *", "Europe/Berlin")?
                .payload_json(r#"{"kind":"daily"}"#)?,
        )
        .await?;
    let app = Router::new().nest("/admin", admin_router(client.clone()));

    let list = listed(&app).await?;
    assert_eq!(list.len(), 1, "{list:?}");
    let s = &list[0];
    assert_eq!(
        (&s["name"], &s["task"], &s["cron"], &s["timezone"]),
        (&json!("nightly"), &json!("report"), &json!("0 0 2 * * *"), &json!("Europe/Berlin"))
    );
    assert_eq!(s["payload"], json!({"kind": "daily"}));
    assert_eq!((&s["misfire"], &s["overlap"]), (&json!({"policy": "skip"}), &json!("allow")));
    assert_eq!(
        (&s["paused"], &s["last_task"], &s["last_state"]),
        (&json!(false), &Value::Null, &Value::Null)
    );
    let (tick, next) = (s["last_tick_ms"].as_u64().ok_or("no last tick")?, s["next_fire_ms"].as_u64());
    let next = next.ok_or("no next fire")?;
    // 02:00 in Berlin comes within a day of any instant (25 h across a DST change).
    assert!(next > tick && next - tick <= 25 * 3_600_000, "last tick {tick}, next fire {next}");

    // Pause and resume flip `paused`; doing it twice changes nothing.
    for (action, paused) in [("pause", true), ("pause", true), ("resume", false), ("resume", false)] {
        let (status, view) =
            json(&app, "POST", &format!("/admin/api/schedules/nightly/{action}"), None).await?;
        assert_eq!((status, &view["paused"]), (StatusCode::OK, &json!(paused)), "{action}: {view}");
        assert_eq!(listed(&app).await?[0]["paused"], json!(paused), "{action}");
    }
    let info = client.schedules().get("nightly").await?.ok_or("nightly is gone")?;
    assert!(!info.paused);

    // Unknown names: 404 with the JSON error, for every action.
    for (method, uri) in [
        ("POST", "/admin/api/schedules/nobody/pause"),
        ("POST", "/admin/api/schedules/nobody/resume"),
        ("DELETE", "/admin/api/schedules/nobody"),
        ("POST", "/admin/api/schedules/a%20b/pause"),
    ] {
        let (status, err) = json(&app, method, uri, None).await?;
        assert_eq!((status, code(&err)), (StatusCode::NOT_FOUND, "not_found"), "{method} {uri}: {err}");
        assert!(err["message"].as_str().is_some_and(|m| m.contains("no schedule")), "{err}");
    }
    let (status, err) = json(&app, "POST", "/admin/api/schedules/%FF/pause", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{err}");

    // Delete removes it; a second delete is a 404.
    let (status, gone) = json(&app, "DELETE", "/admin/api/schedules/nightly", None).await?;
    assert_eq!((status, gone), (StatusCode::OK, json!({"name": "nightly", "deleted": true})));
    assert!(listed(&app).await?.is_empty());
    assert!(client.schedules().get("nightly").await?.is_none());
    let (status, err) = json(&app, "DELETE", "/admin/api/schedules/nightly", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::NOT_FOUND, "not_found"), "{err}");
    Ok(())
}

#[tokio::test]
async fn dashboard_lists_schedules_and_its_forms_pause_and_resume() -> BoxResult {
    let client = Client::without_name_check(MemoryStorage::new(), Namespace::new("schedules-page")?);
    client.schedules().put(Schedule::new("nightly", "report", "0 0 2 * * *", "Europe/Berlin")?).await?;
    client.schedules().put(Schedule::new("<b>odd</b>", "report", "*/5 * * * *", "UTC")?).await?;
    let app = Router::new().nest("/admin", admin_router(client.clone()));

    let (status, _, page) = call(&app, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("<h2>Schedules (2)</h2>"), "{page}");
    assert!(page.contains("<code>0 0 2 * * *</code> (Europe/Berlin)"), "{page}");
    assert!(page.contains("data-pause=\"nightly\""), "{page}");
    assert!(page.contains("&lt;b&gt;odd&lt;/b&gt;") && !page.contains("<b>odd</b>"), "names are escaped");
    assert!(page.contains("action=\"/admin/schedules/%3Cb%3Eodd%3C%2Fb%3E/pause\""), "{page}");

    let (status, _, _) = call(&app, "POST", "/admin/schedules/nightly/pause", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(client.schedules().get("nightly").await?.is_some_and(|s| s.paused));
    let (_, _, page) = call(&app, "GET", "/admin", None).await?;
    assert!(page.contains("data-resume=\"nightly\"") && page.contains("data-paused=\"true\""), "{page}");
    let (status, _, _) = call(&app, "POST", "/admin/schedules/nightly/resume", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(client.schedules().get("nightly").await?.is_some_and(|s| !s.paused));

    // Unknown names and names that are not UTF-8 go back with a notice too.
    for uri in ["/admin/schedules/nobody/pause", "/admin/schedules/%FF/resume"] {
        let (status, _, _) = call(&app, "POST", uri, None).await?;
        assert_eq!(status, StatusCode::SEE_OTHER, "{uri}");
    }
    Ok(())
}

#[tokio::test]
async fn a_fired_tick_shows_its_task_and_state() -> BoxResult {
    let exec = executor("schedules-fired", Arc::new(AtomicBool::new(true))).await?;
    exec.schedules().put(Schedule::new("every-second", "echo", "* * * * * *", "UTC")?).await?;
    let running = exec.start();
    let app = Router::new().nest("/admin", admin_router(&exec));
    eventually("a tick to fire and its task to complete", Duration::from_secs(10), || {
        let app = app.clone();
        async move {
            let list = listed(&app).await?;
            Ok(list.first().is_some_and(|s| {
                s["last_task"].as_str().is_some_and(|id| id.starts_with("every-second@"))
                    && s["last_state"] == json!("COMPLETED")
            }))
        }
    })
    .await?;
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_store_without_schedules_answers_501() -> BoxResult {
    let client = Client::without_name_check(NoSchedules::default(), Namespace::new("no-schedules")?);
    let app = Router::new().nest("/admin", admin_router(client));
    for (method, uri) in [
        ("GET", "/admin/api/schedules"),
        ("POST", "/admin/api/schedules/nightly/pause"),
        ("POST", "/admin/api/schedules/nightly/resume"),
        ("DELETE", "/admin/api/schedules/nightly"),
    ] {
        let (status, err) = json(&app, method, uri, None).await?;
        assert_eq!(
            (status, code(&err)),
            (StatusCode::NOT_IMPLEMENTED, "unsupported"),
            "{method} {uri}: {err}"
        );
        assert!(err["message"].as_str().is_some_and(|m| m.contains("keeps no cron schedules")), "{err}");
    }
    // The dashboard still renders, and says so.
    let (status, _, page) = call(&app, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("This store keeps no cron schedules."), "{page}");
    let (status, _, _) = call(&app, "POST", "/admin/schedules/nightly/pause", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    Ok(())
}
