//! Throughput history through the admin API and the dashboard, on
//! MemoryStorage: counts appear after tasks ran and a flush, every minute
//! of the window is present, a bad `minutes` is `422`, the name filter,
//! the chart's bars, the last flush at shutdown, and `501 unsupported`
//! from a store without history.

use std::time::Duration;

use axum::{Router, http::StatusCode};
use executor_core::{
    Client, Executor, Handler, MemoryStorage, Namespace, RetryPolicy, TaskBuilder, TaskError, TaskOptions,
    TaskState,
};
use reliable_executor_admin::{Admin, admin_router};
use serde_json::{Value, json};

use crate::support::{BoxResult, call, eventually, json, no_schedules::NoSchedules};

/// `ok` completes, `bad` fails for good, `flaky` fails and retries in an hour.
async fn executor(storage: MemoryStorage, ns: &str, every: Duration) -> BoxResult<Executor<MemoryStorage>> {
    Ok(Executor::builder(storage)
        .namespace(ns)
        .concurrency(4)
        .history_interval(every)
        .handler(Handler::new("ok", |_: u32, _ctx| async {}))
        .handler(
            Handler::new("bad", |_: u32, _ctx| async { Err::<(), _>(TaskError::abort("no")) })
                .options(TaskOptions::new().retry_limit(0)),
        )
        .handler(
            Handler::new("flaky", |_: u32, _ctx| async { Err::<(), _>(TaskError::retry("later")) }).options(
                TaskOptions::new().retry_limit(3).retry(RetryPolicy::fixed(Duration::from_secs(3600))),
            ),
        )
        .build()
        .await?)
}

/// Submits 3 `ok`, 2 `bad` and 1 `flaky`, and waits until each attempt ended.
async fn run_tasks(exec: &Executor<MemoryStorage>) -> BoxResult {
    let mut ids = Vec::new();
    for (name, n) in [("ok", 3), ("bad", 2), ("flaky", 1)] {
        for i in 0..n {
            ids.push((name, TaskBuilder::new(name, i, TaskOptions::new()).submit(exec).await?.id));
        }
    }
    for (name, id) in &ids {
        let want = match *name {
            "ok" => TaskState::Completed,
            "bad" => TaskState::Failed,
            _ => TaskState::Pending,
        };
        eventually(&format!("{name} {id} to end its attempt"), Duration::from_secs(10), || async {
            Ok(exec.status(id).await?.is_some_and(|t| t.state == want && t.attempts == 1))
        })
        .await?;
    }
    Ok(())
}

fn totals(v: &Value) -> (u64, u64) {
    (
        v["totals"]["succeeded"].as_u64().unwrap_or(u64::MAX),
        v["totals"]["failed"].as_u64().unwrap_or(u64::MAX),
    )
}

#[tokio::test]
async fn api_answers_every_minute_with_totals_and_filters_by_name() -> BoxResult {
    let exec = executor(MemoryStorage::new(), "history-api", Duration::from_millis(50)).await?;
    let running = exec.start();
    run_tasks(&exec).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));
    eventually("the flushed counts", Duration::from_secs(10), || async {
        let (status, v) = json(&app, "GET", "/admin/api/history", None).await?;
        assert_eq!(status, StatusCode::OK, "{v}");
        Ok(totals(&v) == (3, 3))
    })
    .await?;

    let (_, v) = json(&app, "GET", "/admin/api/history", None).await?;
    assert_eq!((&v["minutes"], &v["name"]), (&json!(60), &Value::Null));
    assert_eq!(v["names"], json!(["bad", "flaky", "ok"]), "{v}");
    let series = v["series"].as_array().ok_or("no series")?;
    assert_eq!(series.len(), 60, "every minute of the window, zeros filled");
    let minutes: Vec<u64> = series.iter().filter_map(|p| p["minute"].as_u64()).collect();
    assert_eq!(minutes.len(), 60);
    assert!(minutes.windows(2).all(|w| w[1] == w[0] + 60_000), "one point a minute, in order");
    assert_eq!((minutes[0], minutes[59]), (v["from"].as_u64().unwrap_or(0), v["to"].as_u64().unwrap_or(0)));
    assert_eq!(minutes[59] % 60_000, 0, "whole minutes");
    let sum = |k: &str| series.iter().filter_map(|p| p[k].as_u64()).sum::<u64>();
    assert_eq!((sum("succeeded"), sum("failed")), (3, 3), "the series sums to the totals");
    let busy = series.iter().filter(|p| p["succeeded"] != json!(0) || p["failed"] != json!(0)).count();
    assert!((1..=2).contains(&busy), "the tasks ran within a minute or two: {busy} busy minutes");

    for (name, want) in [("ok", (3, 0)), ("bad", (0, 2)), ("flaky", (0, 1)), ("nobody", (0, 0))] {
        let (status, v) = json(&app, "GET", &format!("/admin/api/history?name={name}"), None).await?;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!((totals(&v), &v["name"]), (want, &json!(name)), "{name}: {v}");
        assert_eq!(v["names"], json!(["bad", "flaky", "ok"]), "the names seen stay listed");
    }
    let (status, day) = json(&app, "GET", "/admin/api/history?minutes=1440", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(day["series"].as_array().map(Vec::len), Some(1440));
    assert_eq!(totals(&day), (3, 3));
    let (_, one) = json(&app, "GET", "/admin/api/history?minutes=1", None).await?;
    assert_eq!(one["series"].as_array().map(Vec::len), Some(1));

    for bad in ["0", "1441", "abc", "-1", "60.5"] {
        let (status, err) = json(&app, "GET", &format!("/admin/api/history?minutes={bad}"), None).await?;
        assert_eq!(
            (status, &err["code"]),
            (StatusCode::UNPROCESSABLE_ENTITY, &json!("invalid")),
            "{bad}: {err}"
        );
    }
    running.shutdown().await?;
    Ok(())
}

/// The bars of the chart in `html`: `(minute, succeeded, failed)` each.
fn bars(html: &str) -> Vec<(u64, u64, u64)> {
    let attr = |s: &str, key: &str| -> u64 {
        s.split(&format!("{key}=\""))
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(u64::MAX)
    };
    html.split("<g class=\"bar\"")
        .skip(1)
        .map(|s| (attr(s, "data-minute"), attr(s, "data-succeeded"), attr(s, "data-failed")))
        .collect()
}

#[tokio::test]
async fn the_dashboard_draws_a_bar_per_minute_and_switches_window_and_name() -> BoxResult {
    let exec = executor(MemoryStorage::new(), "history-page", Duration::from_millis(50)).await?;
    let running = exec.start();
    run_tasks(&exec).await?;
    let app = Router::new().nest("/admin", admin_router(&exec));
    eventually("the flushed counts", Duration::from_secs(10), || async {
        let (_, v) = json(&app, "GET", "/admin/api/history", None).await?;
        Ok(totals(&v) == (3, 3))
    })
    .await?;

    let (status, _, page) = call(&app, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("<section class=\"chart\" id=\"throughput\""), "{page}");
    assert!(page.contains("<title id=\"throughput-title\">Throughput of all tasks, last 60 minutes</title>"));
    assert!(page.contains("aria-labelledby=\"throughput-title throughput-desc\""));
    assert!(!page.contains("<script src"), "no external script");
    let hour = bars(&page);
    assert_eq!(hour.len(), 60, "a bar a minute");
    assert!(hour.windows(2).all(|w| w[1].0 == w[0].0 + 60_000), "in order, a minute apart");
    let sum = |b: &[(u64, u64, u64)]| b.iter().fold((0, 0), |(s, f), x| (s + x.1, f + x.2));
    assert_eq!(sum(&hour), (3, 3), "the bars carry the counts");
    let drawn = page.matches("<rect class=\"ok\"").count() + page.matches("<rect class=\"fail\"").count();
    let nonzero = hour.iter().map(|b| usize::from(b.1 > 0) + usize::from(b.2 > 0)).sum::<usize>();
    assert_eq!(drawn, nonzero, "a rect for each non-zero count, none for zeros");
    // The same numbers in the table, one row per bar.
    let table = page.split("<table id=\"throughput-table\">").nth(1).ok_or("no table")?;
    let table = table.split("</table>").next().unwrap_or_default();
    assert_eq!(table.matches("<tr><td>").count(), 60);
    for link in ["?minutes=1440", "?minutes=60&amp;name=ok", "data-name=\"bad\"", "data-name=\"flaky\""] {
        assert!(page.contains(link), "missing {link}");
    }

    let (_, _, day) = call(&app, "GET", "/admin?minutes=1440", None).await?;
    let day_bars = bars(&day);
    assert_eq!(day_bars.len(), 96, "a day is drawn as 96 bars of 15 minutes");
    assert_eq!(sum(&day_bars), (3, 3));
    assert!(day.contains("last 24 hours"));

    let (_, _, only) = call(&app, "GET", "/admin?name=bad", None).await?;
    assert_eq!(sum(&bars(&only)), (0, 2), "the name filter");
    assert!(only.contains("Throughput of task bad"));

    // Read-only shows the chart too.
    let ro = Router::new().nest("/admin", admin_router(Admin::from(&exec).read_only(true)));
    let (status, _, ro_page) = call(&ro, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sum(&bars(&ro_page)), (3, 3));
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn the_last_counts_are_flushed_at_shutdown() -> BoxResult {
    let store = MemoryStorage::new();
    // A day between flushes: only the one at shutdown can write them.
    let exec = executor(store.clone(), "history-shutdown", Duration::from_secs(86_400)).await?;
    let running = exec.start();
    run_tasks(&exec).await?;
    let client = Client::without_name_check(store, Namespace::new("history-shutdown")?);
    assert!(client.history(executor_core::Timestamp::default()).await?.is_empty(), "nothing flushed yet");
    running.shutdown().await?;
    let buckets = client.history(executor_core::Timestamp::default()).await?;
    let sum = |name: &str| {
        buckets.iter().filter(|b| b.name == name).fold((0, 0), |(s, f), b| (s + b.succeeded, f + b.failed))
    };
    assert_eq!((sum("ok"), sum("bad"), sum("flaky")), ((3, 0), (0, 2), (0, 1)));
    Ok(())
}

#[tokio::test]
async fn a_store_without_history_answers_501_and_the_dashboard_says_so() -> BoxResult {
    let client = Client::without_name_check(NoSchedules::default(), Namespace::new("no-history")?);
    let app = Router::new().nest("/admin", admin_router(client));
    let (status, err) = json(&app, "GET", "/admin/api/history", None).await?;
    assert_eq!((status, &err["code"]), (StatusCode::NOT_IMPLEMENTED, &json!("unsupported")), "{err}");
    let (status, _, page) = call(&app, "GET", "/admin", None).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("This store keeps no throughput history."), "{page}");
    Ok(())
}
