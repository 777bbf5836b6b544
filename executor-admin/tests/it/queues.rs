//! Named queues through the admin API and the dashboard's forms, on
//! MemoryStorage: list with depth and latency, pause, resume, a bad name,
//! queue and priority on a task, and `501 unsupported` from a store
//! without queue controls.

use std::time::Duration;

use axum::{Router, http::StatusCode};
use executor_admin::admin_router;
use executor_core::{Client, MemoryStorage, Namespace, TaskBuilder, TaskOptions, storage::Storage};
use serde_json::{Value, json};

use crate::support::{BoxResult, call, json, no_schedules::NoSchedules};

fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or("<no code>")
}

async fn listed(app: &Router) -> BoxResult<Vec<Value>> {
    let (status, list) = json(app, "GET", "/admin/api/queues", None).await?;
    assert_eq!(status, StatusCode::OK, "{list}");
    Ok(list.as_array().ok_or("the list is not an array")?.clone())
}

fn find<'a>(list: &'a [Value], queue: &str) -> Option<&'a Value> {
    list.iter().find(|q| q["queue"] == queue)
}

/// A client with two due tasks and a delayed one in `emails` (priorities
/// 5, 0, 0) and one due task in the default queue.
async fn seeded(namespace: &str) -> BoxResult<Client<MemoryStorage>> {
    let client = Client::without_name_check(MemoryStorage::new(), Namespace::new(namespace)?);
    let tasks = [
        ("mail-1", Some("emails"), 5, None),
        ("mail-2", Some("emails"), 0, None),
        ("mail-3", Some("emails"), 0, Some(Duration::from_secs(3600))),
        ("order-1", None, 0, None),
    ];
    for (id, queue, priority, delay) in tasks {
        let mut task = TaskBuilder::new("echo", id, TaskOptions::new()).id(id).priority(priority);
        if let Some(q) = queue {
            task = task.queue(q);
        }
        if let Some(d) = delay {
            task = task.delay(d);
        }
        task.submit(&client).await?;
    }
    Ok(client)
}

#[tokio::test]
async fn list_pause_resume_and_latency() -> BoxResult {
    let client = seeded("queues-api").await?;
    let app = Router::new().nest("/admin", admin_router(client.clone()));
    tokio::time::sleep(Duration::from_millis(30)).await;

    let list = listed(&app).await?;
    assert_eq!(
        list.iter().map(|q| q["queue"].clone()).collect::<Vec<_>>(),
        [json!("default"), json!("emails")]
    );
    let emails = find(&list, "emails").ok_or("no emails queue")?;
    assert_eq!(
        (&emails["waiting"], &emails["due"], &emails["paused"]),
        (&json!(3), &json!(2), &json!(false)),
        "{emails}"
    );
    // Latency is the store's now minus the oldest due time.
    let oldest = emails["oldest_due"].as_u64().ok_or("no oldest_due")?;
    let latency = emails["latency_ms"].as_u64().ok_or("no latency_ms")?;
    let now = Storage::now(client.storage(), client.namespace()).await?.as_millis();
    assert!(latency >= 30 && oldest + latency <= now, "oldest {oldest}, latency {latency}, now {now}");

    // Pause and resume flip `paused`; doing it twice changes nothing; the
    // client (and so every process) sees the same.
    for (action, paused) in [("pause", true), ("pause", true), ("resume", false), ("resume", false)] {
        let (status, view) = json(&app, "POST", &format!("/admin/api/queues/emails/{action}"), None).await?;
        assert_eq!((status, &view["paused"]), (StatusCode::OK, &json!(paused)), "{action}: {view}");
        assert_eq!((&view["queue"], &view["waiting"]), (&json!("emails"), &json!(3)), "{view}");
        let list = listed(&app).await?;
        assert_eq!(find(&list, "emails").map(|q| &q["paused"]), Some(&json!(paused)), "{action}");
        let seen = client.queues().await?;
        assert!(
            seen.iter().any(|q| q.queue.as_str() == "emails" && q.paused == paused),
            "{action}: {seen:?}"
        );
    }

    // A queue without tasks can be paused ahead of its first task; resumed,
    // it leaves the list.
    let (status, view) = json(&app, "POST", "/admin/api/queues/reports/pause", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        view,
        json!({"queue": "reports", "waiting": 0, "due": 0, "oldest_due": null, "latency_ms": null, "paused": true})
    );
    assert!(find(&listed(&app).await?, "reports").is_some_and(|q| q["paused"] == true));
    let (status, view) = json(&app, "POST", "/admin/api/queues/reports/resume", None).await?;
    assert_eq!((status, &view["paused"]), (StatusCode::OK, &json!(false)));
    assert!(find(&listed(&app).await?, "reports").is_none());

    // Bad names: 422 with the validation message, nothing changed.
    let long = "q".repeat(65);
    for name in ["a%20b", "%40x", "a%2Fb", long.as_str()] {
        for action in ["pause", "resume"] {
            let uri = format!("/admin/api/queues/{name}/{action}");
            let (status, err) = json(&app, "POST", &uri, None).await?;
            assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{uri}: {err}");
            assert!(err["message"].as_str().is_some_and(|m| m.contains("queue")), "{err}");
        }
    }
    let (status, err) = json(&app, "POST", "/admin/api/queues/%FF/pause", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{err}");
    assert_eq!(listed(&app).await?.len(), 2);
    Ok(())
}

#[tokio::test]
async fn a_task_shows_its_queue_and_priority() -> BoxResult {
    let client = seeded("queues-task").await?;
    let app = Router::new().nest("/admin", admin_router(client));
    for (id, queue, priority) in [("mail-1", "emails", 5), ("order-1", "default", 0)] {
        let (status, task) = json(&app, "GET", &format!("/admin/api/tasks/{id}"), None).await?;
        assert_eq!(status, StatusCode::OK);
        assert_eq!((&task["queue"], &task["priority"]), (&json!(queue), &json!(priority)), "{task}");
        let (status, _, page) = call(&app, "GET", &format!("/admin/tasks/{id}"), None).await?;
        assert_eq!(status, StatusCode::OK);
        assert!(page.contains(&format!("<dt>Queue</dt><dd>{queue}</dd>")), "{page}");
        assert!(page.contains(&format!("<dt>Priority</dt><dd>{priority} (0 to 9")), "{page}");
    }
    let (_, page) = json(&app, "GET", "/admin/api/tasks?state=created", None).await?;
    let tasks = page["tasks"].as_array().ok_or("no tasks")?;
    assert!(tasks.iter().any(|t| t["id"] == "mail-1" && t["queue"] == "emails" && t["priority"] == 5));
    Ok(())
}

#[tokio::test]
async fn dashboard_lists_queues_and_its_forms_pause_and_resume() -> BoxResult {
    let client = seeded("queues-page").await?;
    let app = Router::new().nest("/admin", admin_router(client.clone()));

    let (status, _, page) = call(&app, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("<h2>Queues (2)</h2>"), "{page}");
    assert!(page.contains("<tr data-queue=\"emails\" data-paused=\"false\">"), "{page}");
    assert!(page.contains("<td>3</td><td>2</td>"), "waiting and due: {page}");
    assert!(page.contains("action=\"/admin/queues/emails/pause\""), "{page}");

    let (status, _, _) = call(&app, "POST", "/admin/queues/emails/pause", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(client.queues().await?.iter().any(|q| q.queue.as_str() == "emails" && q.paused));
    let (_, _, page) = call(&app, "GET", "/admin", None).await?;
    assert!(page.contains("<tr data-queue=\"emails\" data-paused=\"true\">"), "{page}");
    assert!(page.contains("data-resume=\"emails\""), "{page}");
    let (status, _, _) = call(&app, "POST", "/admin/queues/emails/resume", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(client.queues().await?.iter().any(|q| q.queue.as_str() == "emails" && !q.paused));

    // Bad names and names that are not UTF-8 go back with a notice too.
    for uri in ["/admin/queues/a%20b/pause", "/admin/queues/%FF/resume"] {
        let (status, _, _) = call(&app, "POST", uri, None).await?;
        assert_eq!(status, StatusCode::SEE_OTHER, "{uri}");
    }

    // An empty namespace says so.
    let empty = Client::without_name_check(MemoryStorage::new(), Namespace::new("queues-empty")?);
    let (_, _, page) =
        call(&Router::new().nest("/admin", admin_router(empty)), "GET", "/admin", None).await?;
    assert!(page.contains("No queue has waiting tasks or is paused."), "{page}");
    Ok(())
}

#[tokio::test]
async fn a_store_without_queue_controls_answers_501() -> BoxResult {
    let client = Client::without_name_check(NoSchedules::default(), Namespace::new("no-queues")?);
    let app = Router::new().nest("/admin", admin_router(client));
    for (method, uri) in [
        ("GET", "/admin/api/queues"),
        ("POST", "/admin/api/queues/emails/pause"),
        ("POST", "/admin/api/queues/emails/resume"),
    ] {
        let (status, err) = json(&app, method, uri, None).await?;
        assert_eq!(
            (status, code(&err)),
            (StatusCode::NOT_IMPLEMENTED, "unsupported"),
            "{method} {uri}: {err}"
        );
        assert!(err["message"].as_str().is_some_and(|m| m.contains("no queue controls")), "{err}");
    }
    // A bad name is still a bad name, whatever the store.
    let (status, err) = json(&app, "POST", "/admin/api/queues/a%20b/pause", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{err}");
    // The dashboard still renders, and says so.
    let (status, _, page) = call(&app, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("This store has no queue controls."), "{page}");
    let (status, _, _) = call(&app, "POST", "/admin/queues/emails/pause", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    Ok(())
}
