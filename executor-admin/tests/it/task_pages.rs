//! The dashboard's task lists (`GET /tasks?state=&cursor=`) and the find
//! box (`GET /tasks?id=`): every task of a state is reached by following
//! "Next page" from the first page, once each; the find box goes to the
//! task's page; bad input is an error page, not a panic; the overview
//! offers the find box and the auto-refresh, which a read-only page keeps.

use std::{
    collections::HashSet,
    sync::{Arc, atomic::AtomicBool},
};

use axum::{Router, http::StatusCode};
use executor_core::{MemoryStorage, TaskId, TaskState, storage::Storage, testing};
use reliable_executor_admin::{Admin, admin_router};

use crate::support::{BoxResult, call, executor_on};

/// The ids of the task rows of a list page, and its "Next page" link.
fn rows_and_next(page: &str) -> (Vec<String>, Option<String>) {
    let rows = page
        .split("<tr data-task=\"")
        .skip(1)
        .filter_map(|row| row.split('"').next().map(str::to_owned))
        .collect();
    let next = page
        .split("<a href=\"")
        .filter(|a| a.contains("id=\"next-page\""))
        .find_map(|a| a.split('"').next().map(|href| href.replace("&amp;", "&")));
    (rows, next)
}

#[tokio::test]
async fn every_task_of_a_state_is_reached_page_by_page_and_found_by_id() -> BoxResult {
    let exec = executor_on(MemoryStorage::new(), "task-pages", Arc::new(AtomicBool::new(false))).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));
    // 130 waiting tasks (not started: the executor does not run), ids with
    // characters a link must encode.
    let mut ids = HashSet::new();
    for i in 0..130 {
        let id = format!("order/{i:03}+é");
        let mut task = testing::new_task(&id);
        task.name = "echo".to_owned();
        for r in exec.client().submit_many([task]).await {
            r?;
        }
        ids.insert(id);
    }

    let (status, _, mut page) = call(&app, "GET", "/admin/tasks?state=CREATED", None).await?;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("class=\"current\">CREATED <span class=\"n\">130</span>"), "{page}");
    let mut seen = Vec::new();
    let mut pages = 1;
    loop {
        let (rows, next) = rows_and_next(&page);
        assert!(rows.len() <= 50, "a page of {}", rows.len());
        seen.extend(rows);
        let Some(next) = next else { break };
        let (status, _, body) = call(&app, "GET", &next, None).await?;
        assert_eq!(status, StatusCode::OK, "{next}: {body}");
        page = body;
        pages += 1;
        assert!(pages <= 4, "more pages than 130 tasks fill");
    }
    let unique: HashSet<String> = seen.iter().cloned().collect();
    assert_eq!(seen.len(), 130, "each task once");
    assert_eq!(unique, ids.iter().cloned().collect::<HashSet<_>>());
    assert_eq!(pages, 3);

    // Find: a 303 to the task's page, whose link is percent-encoded.
    let (status, _, _) = call(&app, "GET", "/admin/tasks?id=order%2F007%2B%C3%A9", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _, task) = call(&app, "GET", "/admin/tasks/order%2F007%2B%C3%A9", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(task.contains("order/007+é"), "{task}");
    // An unknown id is found to be missing on its page; bad input is a page.
    let (status, _, _) = call(&app, "GET", "/admin/tasks?id=nobody", None).await?;
    assert_eq!(status, StatusCode::SEE_OTHER);
    for (uri, want) in [
        ("/admin/tasks?state=NOPE", StatusCode::UNPROCESSABLE_ENTITY),
        ("/admin/tasks?id=has%20space", StatusCode::UNPROCESSABLE_ENTITY),
        ("/admin/tasks?state=CREATED&state=FAILED", StatusCode::UNPROCESSABLE_ENTITY),
        ("/admin/tasks?state=CREATED&cursor=%00garbage", StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let (status, ctype, body) = call(&app, "GET", uri, None).await?;
        assert_eq!(status, want, "{uri}: {body}");
        assert!(ctype.starts_with("text/html"), "{uri}: {ctype}");
    }
    let (_, _, empty) = call(&app, "GET", "/admin/tasks?state=FAILED", None).await?;
    assert!(empty.contains("No task is in this state."), "{empty}");
    assert_eq!(
        exec.client().status(&TaskId::new("order/000+é")?).await?.map(|t| t.state),
        Some(TaskState::Created)
    );
    Ok(())
}

/// The name filter: the dashboard's pages and the API's pages hold only the
/// tasks of that name, every one of them once; "Next page" and the state
/// tabs keep the filter; a name no task can have is an error page.
#[tokio::test]
async fn a_name_filters_every_page_of_the_dashboard_and_the_api() -> BoxResult {
    let storage = MemoryStorage::new();
    let exec = executor_on(storage.clone(), "task-pages-name", Arc::new(AtomicBool::new(false))).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));
    // 120 waiting tasks, every third named with characters a link must
    // encode (through the store: the client submits only names it runs).
    let ns = executor_core::Namespace::new("task-pages-name")?;
    let mut wanted = HashSet::new();
    for i in 0..120 {
        let mut task = testing::new_task(&format!("t{i:03}"));
        task.name = if i % 3 == 0 { "mail+eu/é".to_owned() } else { "echo".to_owned() };
        if i % 3 == 0 {
            wanted.insert(format!("t{i:03}"));
        }
        storage.submit(&ns, task).await?;
    }
    let (status, _, mut page) =
        call(&app, "GET", "/admin/tasks?state=CREATED&name=mail%2Beu%2F%C3%A9", None).await?;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("named <code id=\"named\">mail+eu/é</code>"), "{page}");
    assert!(
        page.contains("href=\"/admin/tasks?state=FAILED&amp;name=mail%2Beu%2F%C3%A9\""),
        "tabs keep the name"
    );
    let mut seen = Vec::new();
    for pages in 1.. {
        assert!(pages <= 2, "40 tasks took more than one page of 50 and a bit");
        let (rows, next) = rows_and_next(&page);
        seen.extend(rows);
        let Some(next) = next else { break };
        assert!(next.contains("name=mail%2Beu%2F%C3%A9"), "next keeps the name: {next}");
        let (status, _, body) = call(&app, "GET", &next, None).await?;
        assert_eq!(status, StatusCode::OK, "{next}: {body}");
        page = body;
    }
    assert_eq!(seen.len(), 40, "each once: {seen:?}");
    assert_eq!(seen.into_iter().collect::<HashSet<_>>(), wanted);

    let mut api = Vec::new();
    let mut uri = "/admin/api/tasks?state=CREATED&limit=15&name=mail%2Beu%2F%C3%A9".to_owned();
    for _ in 0..10 {
        let (status, _, body) = call(&app, "GET", &uri, None).await?;
        assert_eq!(status, StatusCode::OK, "{body}");
        let page: serde_json::Value = serde_json::from_str(&body)?;
        for t in page["tasks"].as_array().ok_or("no tasks")? {
            assert_eq!(t["name"].as_str(), Some("mail+eu/é"), "{t}");
            api.extend(t["id"].as_str().map(str::to_owned));
        }
        match page["next"].as_str() {
            Some(next) => {
                uri = format!("/admin/api/tasks?state=CREATED&limit=15&name=mail%2Beu%2F%C3%A9&cursor={next}")
            }
            None => break,
        }
    }
    assert_eq!(api.into_iter().collect::<HashSet<_>>(), wanted);

    // A name with markup in it is shown as text, in the heading, the filter
    // box and the rows, never as markup.
    let mut odd = testing::new_task("odd-1");
    odd.name = "<i>\"x\"&amp;</i>".to_owned();
    storage.submit(&ns, odd).await?;
    let (status, _, page) =
        call(&app, "GET", "/admin/tasks?state=CREATED&name=%3Ci%3E%22x%22%26amp%3B%3C%2Fi%3E", None).await?;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(!page.contains("<i>"), "markup from a task name reached the page: {page}");
    assert!(page.contains("&lt;i&gt;&quot;x&quot;&amp;amp;&lt;/i&gt;"), "{page}");
    assert_eq!(rows_and_next(&page).0, ["odd-1"]);

    let (_, _, none) = call(&app, "GET", "/admin/tasks?state=CREATED&name=nobody", None).await?;
    assert!(none.contains("No task of this name is in this state."), "{none}");
    for uri in
        ["/admin/tasks?state=CREATED&name=has%20space", "/admin/api/tasks?state=CREATED&name=has%20space"]
    {
        let (status, _, body) = call(&app, "GET", uri, None).await?;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {body}");
    }
    // An empty name is no filter.
    let (_, _, all) = call(&app, "GET", "/admin/tasks?state=CREATED&name=", None).await?;
    assert_eq!(rows_and_next(&all).0.len(), 50, "{all}");
    Ok(())
}

#[tokio::test]
async fn the_overview_offers_find_and_refresh_and_read_only_keeps_them() -> BoxResult {
    let exec = executor_on(MemoryStorage::new(), "overview-find", Arc::new(AtomicBool::new(false))).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));
    let ro = Router::new().nest("/admin", admin_router(Admin::from(&exec).read_only(true)));
    let (_, _, plain) = call(&app, "GET", "/admin", None).await?;
    assert!(plain.contains("id=\"find-id\"") && plain.contains("href=\"/admin?refresh=5\""), "{plain}");
    assert!(!plain.contains("<script"), "no script unless asked");
    assert!(plain.contains("href=\"/admin/tasks?state=FAILED\""), "counts link to their pages");
    let (_, _, refreshing) = call(&app, "GET", "/admin?refresh=5", None).await?;
    assert!(refreshing.contains("<script>") && refreshing.contains("var ms=5000"), "{refreshing}");
    assert!(refreshing.contains("id=\"refresh-off\""));
    let (_, _, bad) = call(&app, "GET", "/admin?refresh=0", None).await?;
    assert!(!bad.contains("<script"), "0 s is no refresh");
    let (_, _, read_only) = call(&ro, "GET", "/admin", None).await?;
    assert!(read_only.contains("id=\"find-id\"") && !read_only.contains("method=\"post\""), "{read_only}");
    Ok(())
}
