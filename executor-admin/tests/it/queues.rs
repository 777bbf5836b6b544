//! Named queues through the admin API and the dashboard's forms, on
//! MemoryStorage: list with depth and latency, pause, resume, a bad name,
//! queue and priority on a task, limits set, shown (with running tasks
//! and throttled claims) and cleared, bad limits, and `501 unsupported`
//! from a store without queue controls.

use std::time::Duration;

use axum::{Router, http::StatusCode};
use executor_core::{
    Client, MemoryStorage, Namespace, QueueName, TaskBuilder, TaskOptions, WorkerId,
    queue::{ClaimPlan, QueueLimits, RateLimit},
    storage::Storage,
};
use reliable_executor_admin::admin_router;
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
        json!({
            "queue": "reports", "waiting": 0, "due": 0, "oldest_due": null, "latency_ms": null, "paused": true,
            "running": 0, "limits": {"concurrency": null, "rate": null}, "throttled": 0
        })
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
    assert!(page.contains("No queue has waiting or running tasks, is paused or has limits."), "{page}");
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
    for body in ["{}", r#"{"concurrency":4,"rate":{"starts":50,"per_ms":1000}}"#] {
        let (status, err) = json(&app, "PUT", "/admin/api/queues/emails/limits", Some(body)).await?;
        assert_eq!((status, code(&err)), (StatusCode::NOT_IMPLEMENTED, "unsupported"), "{body}: {err}");
        assert!(err["message"].as_str().is_some_and(|m| m.contains("no queue limits")), "{err}");
    }
    // Bad limits are bad limits, whatever the store.
    let (status, err) =
        json(&app, "PUT", "/admin/api/queues/emails/limits", Some(r#"{"concurrency":0}"#)).await?;
    assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{err}");
    // A bad name is still a bad name, whatever the store.
    let (status, err) = json(&app, "POST", "/admin/api/queues/a%20b/pause", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{err}");
    // The dashboard still renders, and says so.
    let (status, _, page) = call(&app, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("This store has no queue controls."), "{page}");
    for uri in ["/admin/queues/emails/pause", "/admin/queues/emails/limits"] {
        let (status, _, _) = call(&app, "POST", uri, None).await?;
        assert_eq!(status, StatusCode::SEE_OTHER, "{uri}");
    }
    Ok(())
}

async fn put_limits(app: &Router, queue: &str, body: &str) -> BoxResult<(StatusCode, Value)> {
    json(app, "PUT", &format!("/admin/api/queues/{queue}/limits"), Some(body)).await
}

#[tokio::test]
async fn limits_are_set_shown_and_cleared() -> BoxResult {
    let client = seeded("queues-limits").await?;
    let app = Router::new().nest("/admin", admin_router(client.clone()));
    let emails = QueueName::new("emails")?;

    // Both limits; the burst defaults to the rate.
    let (status, view) =
        put_limits(&app, "emails", r#"{"concurrency":4,"rate":{"starts":50,"per_ms":1000}}"#).await?;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(
        (&view["queue"], &view["waiting"], &view["limits"]),
        (
            &json!("emails"),
            &json!(3),
            &json!({"concurrency": 4, "rate": {"starts": 50, "per_ms": 1000, "burst": 50}})
        ),
        "{view}"
    );
    assert_eq!(find(&listed(&app).await?, "emails").map(|q| &q["limits"]), Some(&view["limits"]));
    let seen = client.queues().await?.into_iter().find(|q| q.queue == emails).ok_or("no emails")?;
    assert_eq!(seen.limits, QueueLimits::new().concurrency(4).rate(RateLimit::per_second(50)?));

    // A body replaces the limits: the concurrency limit left out is gone.
    let (status, view) =
        put_limits(&app, "emails", r#"{"rate":{"starts":600,"per_ms":60000,"burst":10}}"#).await?;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(
        view["limits"],
        json!({"concurrency": null, "rate": {"starts": 600, "per_ms": 60000, "burst": 10}}),
        "{view}"
    );

    // Running tasks and throttled claims: with a concurrency limit of 1,
    // a claim of 2 from the queue's 2 due tasks takes 1.
    let (status, _) = put_limits(&app, "emails", r#"{"concurrency":1}"#).await?;
    assert_eq!(status, StatusCode::OK);
    let plan = ClaimPlan::single(emails.clone(), 2);
    let claimed = client
        .storage()
        .claim(client.namespace(), &WorkerId::generate(), &plan, Duration::from_secs(60))
        .await?;
    assert_eq!(claimed.len(), 1);
    let view = find(&listed(&app).await?, "emails").cloned().ok_or("no emails")?;
    assert_eq!((&view["running"], &view["due"]), (&json!(1), &json!(1)), "{view}");
    assert!(view["throttled"].as_u64().is_some_and(|n| n >= 1), "{view}");

    // `{}` clears them.
    let (status, view) = put_limits(&app, "emails", "{}").await?;
    assert_eq!((status, &view["limits"]), (StatusCode::OK, &json!({"concurrency": null, "rate": null})));
    let seen = client.queues().await?.into_iter().find(|q| q.queue == emails).ok_or("no emails")?;
    assert!(seen.limits.is_none(), "{seen:?}");

    // A queue without tasks can be limited ahead of its first task (and is
    // listed); cleared, it leaves the list and reads as empty.
    let (status, view) = put_limits(&app, "reports", r#"{"concurrency":2}"#).await?;
    assert_eq!((status, &view["limits"]["concurrency"]), (StatusCode::OK, &json!(2)), "{view}");
    assert!(find(&listed(&app).await?, "reports").is_some());
    let (status, view) = put_limits(&app, "reports", "{}").await?;
    assert_eq!(
        (status, &view["waiting"], &view["limits"]["concurrency"]),
        (StatusCode::OK, &json!(0), &json!(null))
    );
    assert!(find(&listed(&app).await?, "reports").is_none());

    // Bad values: 422 `invalid` naming the value, nothing changed.
    put_limits(&app, "emails", r#"{"concurrency":3}"#).await?;
    for (body, names) in [
        (r#"{"concurrency":0}"#, "concurrency limit"),
        (r#"{"concurrency":1000001}"#, "concurrency limit"),
        (r#"{"rate":{"starts":0,"per_ms":1000}}"#, "rate starts"),
        (r#"{"rate":{"starts":5,"per_ms":0}}"#, "rate interval"),
        (r#"{"rate":{"starts":5,"per_ms":86400001}}"#, "rate interval"),
        (r#"{"rate":{"starts":5,"per_ms":1000,"burst":0}}"#, "rate burst"),
    ] {
        let (status, err) = put_limits(&app, "emails", body).await?;
        assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{body}: {err}");
        assert!(err["message"].as_str().is_some_and(|m| m.contains(names)), "{body}: {err}");
    }
    // Wrong shapes are `invalid_body`, a bad name `invalid`, no JSON 415/400.
    for body in [r#"{"concurrency":-1}"#, r#"{"rate":{"starts":5}}"#, r#"{"limit":3}"#, "[]"] {
        let (status, err) = put_limits(&app, "emails", body).await?;
        assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"), "{body}: {err}");
    }
    let (status, err) = put_limits(&app, "e%20mails", "{}").await?;
    assert_eq!((status, code(&err)), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{err}");
    assert!(err["message"].as_str().is_some_and(|m| m.contains("queue")), "{err}");
    let (status, err) = put_limits(&app, "emails", "{").await?;
    assert_eq!((status, code(&err)), (StatusCode::BAD_REQUEST, "malformed_json"), "{err}");
    let (status, err) = json(&app, "PUT", "/admin/api/queues/emails/limits", None).await?;
    assert_eq!((status, code(&err)), (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"), "{err}");
    let seen = client.queues().await?.into_iter().find(|q| q.queue == emails).ok_or("no emails")?;
    assert_eq!(seen.limits, QueueLimits::new().concurrency(3));
    Ok(())
}

/// A form POST, as a browser sends it.
async fn form(app: &Router, uri: &str, body: &str) -> BoxResult<(StatusCode, String)> {
    use axum::{
        body::Body,
        http::{Request, header},
    };
    use tower::ServiceExt as _;
    let req = Request::builder()
        .method("POST")
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body.to_owned()))?;
    let resp = app.clone().oneshot(req).await?;
    let location =
        resp.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("").to_owned();
    Ok((resp.status(), location))
}

#[tokio::test]
async fn dashboard_shows_limits_and_its_form_sets_and_clears_them() -> BoxResult {
    let client = seeded("queues-limits-page").await?;
    let app = Router::new().nest("/admin", admin_router(client.clone()));
    let emails = QueueName::new("emails")?;
    let limits_of = |client: Client<MemoryStorage>| async move {
        let listed = client.queues().await?;
        BoxResult::Ok(listed.into_iter().find(|q| q.queue.as_str() == "emails").map(|q| q.limits))
    };

    let (_, _, page) = call(&app, "GET", "/admin", None).await?;
    assert!(
        page.contains("<th>Running</th><th>Concurrency limit</th><th>Rate limit</th><th>Throttled</th>"),
        "{page}"
    );
    assert!(page.contains("action=\"/admin/queues/emails/limits\""), "{page}");
    assert!(page.contains("<td data-concurrency-limit=\"emails\">—</td>"), "{page}");

    let (status, location) = form(&app, "/admin/queues/emails/limits", "concurrency=4&rate=50").await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(location.contains("notice=Limited%20queue%20emails"), "{location}");
    assert_eq!(
        limits_of(client.clone()).await?,
        Some(QueueLimits::new().concurrency(4).rate(RateLimit::per_second(50)?))
    );
    let (_, _, page) = call(&app, "GET", "/admin", None).await?;
    assert!(
        page.contains("<td data-concurrency-limit=\"emails\">4</td><td data-rate-limit=\"emails\">50/s</td>"),
        "{page}"
    );
    assert!(page.contains("value=\"4\" data-concurrency=\"emails\""), "{page}");
    assert!(page.contains("data-clear-limits=\"emails\""), "{page}");

    // A rate the form cannot show is kept while its field stays empty.
    let rate = RateLimit::new(600, Duration::from_secs(60))?.burst(10)?;
    client.set_queue_limits("emails", QueueLimits::new().concurrency(4).rate(rate)).await?;
    let (_, _, page) = call(&app, "GET", "/admin", None).await?;
    assert!(page.contains("600/min (burst 10)"), "{page}");
    assert!(page.contains("name=\"keep_rate\""), "{page}");
    form(&app, "/admin/queues/emails/limits", "keep_rate=1&concurrency=2&rate=").await?;
    assert_eq!(limits_of(client.clone()).await?, Some(QueueLimits::new().concurrency(2).rate(rate)));

    // Bad values go back with the reason; nothing changes.
    for body in ["concurrency=0&rate=", "concurrency=x&rate=", "concurrency=&rate=-5"] {
        let (status, location) = form(&app, "/admin/queues/emails/limits", body).await?;
        assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
        assert!(location.contains("?bad="), "{body}: {location}");
    }
    let (_, location) = form(&app, "/admin/queues/e%20mails/limits", "concurrency=1").await?;
    assert!(location.contains("?bad="), "{location}");
    assert_eq!(limits_of(client.clone()).await?, Some(QueueLimits::new().concurrency(2).rate(rate)));

    // Clear removes both; so do two empty fields.
    let (_, location) = form(&app, "/admin/queues/emails/limits", "concurrency=2&rate=&clear=1").await?;
    assert!(location.contains("notice=Cleared%20the%20limits%20of%20queue%20emails."), "{location}");
    assert_eq!(limits_of(client.clone()).await?, Some(QueueLimits::new()));
    form(&app, "/admin/queues/emails/limits", "concurrency=7&rate=").await?;
    form(&app, "/admin/queues/emails/limits", "concurrency=&rate=").await?;
    assert!(client.queues().await?.iter().all(|q| q.queue != emails || q.limits.is_none()));
    Ok(())
}
