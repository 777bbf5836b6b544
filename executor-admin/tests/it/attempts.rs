//! Every attempt of a task, on its JSON (`GET /api/tasks/{id}`,
//! `all_attempts`) and on its dashboard page (the "Attempts" table): the
//! retried attempt from the attempt log, the dead one a requeue kept, and
//! the current one; list pages leave the attempts out.

use std::time::Duration;

use axum::http::StatusCode;
use executor_core::{
    Client, MemoryStorage, Namespace, TaskId, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Storage},
    testing,
};
use reliable_executor_admin::admin_router;

use crate::support::{BoxResult, call, json};

/// Claims the only due task and ends its attempt with `finish`.
async fn run_once(store: &MemoryStorage, ns: &Namespace, worker: &WorkerId, finish: Finish) -> BoxResult {
    let claimed = store.claim(ns, worker, &ClaimPlan::default_queue(1), Duration::from_secs(60)).await?;
    let lease = claimed.first().and_then(|r| r.lease()).ok_or("nothing was due")?;
    store.finish(ns, &lease, finish).await?;
    Ok(())
}

#[tokio::test]
async fn a_task_shows_every_attempt_on_its_json_and_its_page() -> BoxResult {
    let store = MemoryStorage::new();
    let ns = Namespace::new("attempts")?;
    let app = admin_router(Client::without_name_check(store.clone(), ns.clone()));
    store.submit(&ns, testing::new_task("crm-7")).await?;
    let first = WorkerId::new("host-a:1")?;
    let retry = Finish::Retry { delay: Duration::ZERO, error: "CRM <said> 503".into() };
    run_once(&store, &ns, &first, retry).await?;
    run_once(&store, &ns, &WorkerId::new("host-b:2")?, Finish::Failed { error: "gave up".into() }).await?;
    store.requeue(&ns, &TaskId::new("crm-7")?).await?;
    let claimed = store
        .claim(&ns, &WorkerId::new("host-c:3")?, &ClaimPlan::default_queue(1), Duration::from_secs(60))
        .await?;
    assert_eq!(claimed.len(), 1, "requeued and claimed again");

    let (status, task) = json(&app, "GET", "/api/tasks/crm-7", None).await?;
    assert_eq!(status, StatusCode::OK, "{task}");
    let all = task["all_attempts"].as_array().ok_or("no all_attempts")?;
    let seen: Vec<(u64, &str)> = all
        .iter()
        .map(|a| (a["attempt"].as_u64().unwrap_or(0), a["outcome"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(seen, [(1, "failed"), (2, "dead"), (1, "running")], "{task}");
    assert_eq!(all[0]["worker"].as_str(), Some("host-a:1"), "{task}");
    assert_eq!(all[0]["error"].as_str(), Some("CRM <said> 503"), "{task}");
    assert!(all[0]["duration_ms"].is_u64() && all[0]["ended_at"].is_u64(), "{task}");
    assert_eq!(all[1]["error"].as_str(), Some("gave up"), "{task}");
    assert_eq!((all[2]["worker"].as_str(), all[2]["ended_at"].is_null()), (Some("host-c:3"), true), "{task}");

    // A page of the list leaves the attempts out: it stays as it was.
    let (_, page) = json(&app, "GET", "/api/tasks?state=RUNNING", None).await?;
    assert_eq!(page["tasks"][0]["id"].as_str(), Some("crm-7"), "{page}");
    assert!(page["tasks"][0].get("all_attempts").is_none(), "{page}");

    let (status, _, html) = call(&app, "GET", "/tasks/crm-7", None).await?;
    assert_eq!(status, StatusCode::OK);
    let table = html.split("<table id=\"attempts\">").nth(1).ok_or("no Attempts table")?;
    let table = table.split("</table>").next().unwrap_or_default();
    assert!(html.contains("<h2>Attempts</h2>"), "{html}");
    for header in ["#", "Worker", "Started", "Ended", "Duration", "Outcome", "Error"] {
        assert!(table.contains(&format!("<th>{header}</th>")), "no {header} column: {table}");
    }
    let rows: Vec<&str> = table.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(
        rows[0].starts_with("<td>1</td><td>host-a:1</td>") && rows[0].contains(">failed<"),
        "{}",
        rows[0]
    );
    assert!(rows[0].contains("CRM &lt;said&gt; 503"), "the error is escaped: {}", rows[0]);
    assert!(rows[1].starts_with("<td>2</td>") && rows[1].contains(">dead<") && rows[1].contains("gave up"));
    assert!(
        rows[2].starts_with("<td>1</td><td>host-c:3</td>") && rows[2].contains(">running<"),
        "{}",
        rows[2]
    );

    // A task never claimed says so.
    store.submit(&ns, testing::new_task("fresh")).await?;
    let (_, _, html) = call(&app, "GET", "/tasks/fresh", None).await?;
    assert!(html.contains("No attempt started yet."), "{html}");
    Ok(())
}
