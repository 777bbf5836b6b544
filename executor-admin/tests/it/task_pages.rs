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
use executor_admin::{Admin, admin_router};
use executor_core::{MemoryStorage, TaskId, TaskState, testing};

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
