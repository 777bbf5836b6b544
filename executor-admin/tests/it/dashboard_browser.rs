//! The dashboard in a real browser: headless Chromium driven through
//! chromedriver opens the page, clicks "Requeue" on a dead-lettered task
//! and sees it leave the dead letter, clicks "Pause" on a cron schedule
//! and sees it paused through the API, then pauses and resumes a named
//! queue with its buttons and sees both on the page and through the API,
//! and sets a concurrency limit on it through its limits form, sees it on
//! the page and through the API, and clears it, and sees the throughput
//! chart draw the attempts that ran. `scripts/test.d/chromium.sh` installs
//! both; set `UPDATE_SCREENSHOT=1` to refresh `docs/dashboard.png`.

use std::{
    net::{SocketAddr, TcpListener as StdListener},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::http::StatusCode;
use executor_core::{TaskBuilder, TaskId, TaskOptions, TaskState, schedule::Schedule};
use fantoccini::{ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::support::{self, BoxResult, eventually, json};

/// Kills chromedriver (and so its browser) and removes the profile, even
/// when the test fails.
struct Driver {
    child: Child,
    profile: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// The handler's own defaults, as its typed helper would use.
fn defaults(exec: &executor_core::Executor<executor_core::MemoryStorage>, name: &str) -> TaskOptions {
    exec.registry().get(name).map(|h| h.default_options().clone()).unwrap_or_default()
}

fn free_port() -> BoxResult<u16> {
    Ok(StdListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn start_chromedriver(port: u16) -> BoxResult<Driver> {
    let path = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".to_owned());
    if !std::path::Path::new(&path).exists() {
        return Err(format!(
            "chromedriver not found at `{path}`: install Debian's chromium and chromium-driver \
             (`source scripts/services.sh && source scripts/test.d/chromium.sh`, which scripts/test.sh does) \
             or set CHROMEDRIVER"
        )
        .into());
    }
    let profile = std::env::temp_dir().join(format!("executor-admin-chromium-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&profile)?;
    let child = Command::new(&path)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start chromedriver `{path}`: {e}"))?;
    Ok(Driver { child, profile })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_from_the_dashboard_in_chromium() -> BoxResult {
    // The service: an executor with a few tasks in every interesting state.
    let broken = Arc::new(AtomicBool::new(true));
    let exec = support::executor("shop", Arc::clone(&broken)).await?;
    let running = exec.start();
    for n in 0..4 {
        TaskBuilder::new("echo", n, TaskOptions::new()).id(format!("order-{n}-paid")).submit(&exec).await?;
    }
    for c in [1042, 2077] {
        TaskBuilder::new("sync_crm", c, defaults(&exec, "sync_crm"))
            .id(format!("crm-{c}"))
            .submit(&exec)
            .await?;
    }
    TaskBuilder::new("import_feed", "https://feeds.example/prices.xml", defaults(&exec, "import_feed"))
        .id("feed-prices")
        .submit(&exec)
        .await?;
    TaskBuilder::new("echo", "later", TaskOptions::new())
        .id("reminder-7")
        .delay(Duration::from_secs(3600))
        .submit(&exec)
        .await?;
    for c in ["crm-1042", "crm-2077"] {
        assert_eq!(exec.wait_for(&TaskId::new(c)?, Duration::from_secs(5)).await?.state, TaskState::Failed);
    }
    let feed = TaskId::new("feed-prices")?;
    eventually("the feed import to fail once", Duration::from_secs(5), || {
        let exec = exec.clone();
        let feed = feed.clone();
        async move { Ok(exec.status(&feed).await?.is_some_and(|t| t.last_error.is_some())) }
    })
    .await?;

    exec.schedules().put(Schedule::new("nightly", "echo", "0 0 2 * * *", "Europe/Berlin")?).await?;
    // Mail waits in a queue this executor does not serve: due, so its
    // latency grows.
    for (n, priority) in [(1, 5), (2, 0), (3, 0)] {
        TaskBuilder::new("echo", n, TaskOptions::new())
            .id(format!("mail-{n}"))
            .queue("emails")
            .priority(priority)
            .submit(&exec)
            .await?;
    }

    let app = axum::Router::new().nest("/admin", reliable_executor_admin::admin_router(&exec));
    let api = app.clone();
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let url = format!("http://{}/admin", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // The browser.
    let port = free_port()?;
    let driver = start_chromedriver(port)?;
    let webdriver = format!("http://127.0.0.1:{port}");
    eventually("chromedriver to listen", Duration::from_secs(20), || {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        async move { Ok(tokio::net::TcpStream::connect(addr).await.is_ok()) }
    })
    .await?;
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let caps = serde_json::json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1280,900", format!("--user-data-dir={}", driver.profile.display()),
            ]
        }
    });
    let serde_json::Value::Object(caps) = caps else { return Err("capabilities are not an object".into()) };
    let browser = ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&webdriver)
        .await
        .map_err(|e| format!("chromedriver at {webdriver} did not start a Chromium session: {e}"))?;

    let result = async {
        browser.goto(&url).await?;
        let button = browser
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css("button[data-requeue='crm-1042']"))
            .await?;
        let rows = browser.find_all(Locator::Css("#dead-letter tr[data-task]")).await?;
        assert_eq!(rows.len(), 2, "both failed CRM syncs are in the dead letter");
        let shot = browser.screenshot().await?;
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
        std::fs::write(&out, &shot)?;
        if std::env::var_os("UPDATE_SCREENSHOT").is_some() {
            std::fs::write(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/dashboard.png"), &shot)?;
        }

        broken.store(false, Ordering::SeqCst); // the "bug" is fixed: the requeued task will succeed
        button.click().await?;
        eventually("the requeue notice", Duration::from_secs(10), || {
            let browser = browser.clone();
            async move { notice_says(&browser, "Requeued crm-1042.").await }
        })
        .await?;
        eventually("crm-1042 to leave the dead letter on the page", Duration::from_secs(10), || {
            let browser = browser.clone();
            async move {
                browser.refresh().await?;
                let gone = browser.find_all(Locator::Css("tr[data-task='crm-1042']")).await?.is_empty();
                let other = browser.find_all(Locator::Css("tr[data-task='crm-2077']")).await?.len() == 1;
                Ok(gone && other)
            }
        })
        .await?;
        let done = exec.wait_for(&TaskId::new("crm-1042")?, Duration::from_secs(5)).await?;
        assert_eq!((done.state, done.attempts), (TaskState::Completed, 1));

        // The Schedules section: the schedule and its Pause button, whose
        // effect the API then shows.
        let row = browser.find(Locator::Css("#schedules tr[data-schedule='nightly']")).await?.text().await?;
        assert!(row.contains("0 0 2 * * * (Europe/Berlin)") && row.contains("active"), "row: {row}");
        browser.find(Locator::Css("button[data-pause='nightly']")).await?.click().await?;
        eventually("the pause notice", Duration::from_secs(10), || {
            let browser = browser.clone();
            async move { notice_says(&browser, "Paused schedule nightly.").await }
        })
        .await?;
        let (status, listed) = json(&api, "GET", "/admin/api/schedules", None).await?;
        assert_eq!(
            (status, &listed[0]["name"], &listed[0]["paused"]),
            (StatusCode::OK, &"nightly".into(), &true.into())
        );
        browser.find(Locator::Css("button[data-resume='nightly']")).await?;

        // The Queues section: the waiting mail, then Pause and Resume, each
        // seen on the page and through the API.
        let row = browser.find(Locator::Css("#queues tr[data-queue='emails']")).await?.text().await?;
        assert!(row.starts_with("emails 3 3 ") && row.contains("active"), "row: {row}");
        for (button, notice, paused) in
            [("pause", "Paused queue emails.", true), ("resume", "Resumed queue emails.", false)]
        {
            let selector = format!("#queues button[data-{button}='emails']");
            browser.find(Locator::Css(&selector)).await?.click().await?;
            eventually(notice, Duration::from_secs(10), || {
                let browser = browser.clone();
                async move { notice_says(&browser, notice).await }
            })
            .await?;
            let row = browser.find(Locator::Css("#queues tr[data-queue='emails']")).await?;
            let (flag, text) = (row.attr("data-paused").await?, row.text().await?);
            assert_eq!(flag.as_deref(), Some(if paused { "true" } else { "false" }), "row: {text}");
            assert!(text.contains(if paused { "paused" } else { "active" }), "row: {text}");
            let (status, listed) = json(&api, "GET", "/admin/api/queues", None).await?;
            let emails = listed
                .as_array()
                .and_then(|l| l.iter().find(|q| q["queue"] == "emails"))
                .ok_or_else(|| format!("no emails queue in {listed}"))?;
            assert_eq!(
                (status, &emails["paused"], &emails["waiting"]),
                (StatusCode::OK, &paused.into(), &3.into())
            );
        }

        // Its limits form: a concurrency limit of 2, seen on the page and
        // through the API, then Clear.
        let field = browser.find(Locator::Css("#queues input[data-concurrency='emails']")).await?;
        field.send_keys("2").await?;
        browser.find(Locator::Css("#queues button[data-set-limits='emails']")).await?.click().await?;
        let limited = "Limited queue emails: at most 2 running.";
        eventually(limited, Duration::from_secs(10), || {
            let browser = browser.clone();
            async move { notice_says(&browser, limited).await }
        })
        .await?;
        let cell = browser.find(Locator::Css("#queues td[data-concurrency-limit='emails']")).await?;
        assert_eq!(cell.text().await?, "2");
        let value = browser.find(Locator::Css("#queues input[data-concurrency='emails']")).await?;
        assert_eq!(value.prop("value").await?.as_deref(), Some("2"));
        let emails_limits = |api: axum::Router| async move {
            let (status, listed) = json(&api, "GET", "/admin/api/queues", None).await?;
            assert_eq!(status, StatusCode::OK);
            let emails = listed
                .as_array()
                .and_then(|l| l.iter().find(|q| q["queue"] == "emails"))
                .ok_or_else(|| format!("no emails queue in {listed}"))?;
            BoxResult::Ok(emails["limits"].clone())
        };
        assert_eq!(emails_limits(api.clone()).await?, serde_json::json!({"concurrency": 2, "rate": null}));
        browser.find(Locator::Css("#queues button[data-clear-limits='emails']")).await?.click().await?;
        let cleared = "Cleared the limits of queue emails.";
        eventually(cleared, Duration::from_secs(10), || {
            let browser = browser.clone();
            async move { notice_says(&browser, cleared).await }
        })
        .await?;
        let cell = browser.find(Locator::Css("#queues td[data-concurrency-limit='emails']")).await?;
        assert_eq!(cell.text().await?, "—");
        assert_eq!(emails_limits(api.clone()).await?, serde_json::json!({"concurrency": null, "rate": null}));
        // Auto-refresh: the overview at `?refresh=1` shows a task completed
        // after it loaded, without reloading (a marker set on the loaded
        // page survives).
        browser.goto(&format!("{url}?refresh=1")).await?;
        browser.execute("window.__loaded_once = true; return null;", vec![]).await?;
        let completed = |browser: fantoccini::Client| async move {
            let n = browser.find(Locator::Css(".card[data-state='COMPLETED'] .n")).await?.text().await;
            BoxResult::Ok(n.ok().and_then(|t| t.parse::<u64>().ok()))
        };
        let before = completed(browser.clone()).await?.ok_or("no COMPLETED count")?;
        TaskBuilder::new("echo", 99, TaskOptions::new()).id("refresh-probe").submit(&exec).await?;
        exec.wait_for(&TaskId::new("refresh-probe")?, Duration::from_secs(5)).await?;
        eventually("the count to refresh in place", Duration::from_secs(10), || {
            let browser = browser.clone();
            async move { Ok(completed(browser).await? == Some(before + 1)) }
        })
        .await?;
        let same_page = browser.execute("return window.__loaded_once === true;", vec![]).await?;
        assert_eq!(same_page, serde_json::json!(true), "the page was reloaded instead of refreshed");

        // Find a task by id from the overview.
        browser.goto(&url).await?;
        browser.find(Locator::Id("find-id")).await?.send_keys("crm-1042").await?;
        browser.find(Locator::Id("find")).await?.click().await?;
        eventually("the task page", Duration::from_secs(10), || {
            let browser = browser.clone();
            async move { Ok(browser.current_url().await?.path().ends_with("/tasks/crm-1042")) }
        })
        .await?;

        // Run now: a task due in an hour, from its page; the running
        // executor then completes it.
        TaskBuilder::new("echo", 5, TaskOptions::new())
            .id("later-1")
            .delay(Duration::from_secs(3_600))
            .submit(&exec)
            .await?;
        browser.goto(&format!("{url}/tasks/later-1")).await?;
        browser.find(Locator::Css("button[data-run-now='later-1']")).await?.click().await?;
        eventually("the run-now notice", Duration::from_secs(10), || {
            let browser = browser.clone();
            async move { notice_says(&browser, "later-1 is due now.").await }
        })
        .await?;
        exec.wait_for(&TaskId::new("later-1")?, Duration::from_secs(10)).await?;
        assert_eq!(
            exec.client().status(&TaskId::new("later-1")?).await?.map(|t| t.state),
            Some(TaskState::Completed)
        );

        // Run now on a retry that backs off for an hour: each run is one
        // more failed attempt, and the task page lists every one.
        let feed = TaskId::new("feed-prices")?;
        for attempts in [2, 3] {
            browser.goto(&format!("{url}/tasks/feed-prices")).await?;
            browser.find(Locator::Css("button[data-run-now='feed-prices']")).await?.click().await?;
            eventually("the feed import to fail again", Duration::from_secs(10), || {
                let exec = exec.clone();
                let feed = feed.clone();
                async move {
                    Ok(exec
                        .status(&feed)
                        .await?
                        .is_some_and(|t| t.attempts == attempts && t.state == TaskState::Pending))
                }
            })
            .await?;
        }
        browser.goto(&format!("{url}/tasks/feed-prices")).await?;
        let rows = browser.find_all(Locator::Css("#attempts tr")).await?;
        assert_eq!(rows.len(), 4, "a header and three failed attempts");
        let table = browser.find(Locator::Id("attempts")).await?.text().await?;
        assert!(table.contains("502 Bad Gateway") && table.contains("failed"), "{table}");
        browser.execute("document.getElementById('attempts').scrollIntoView();", vec![]).await?;
        screenshot(&browser, "dashboard-task.png").await?;

        // Filter a state's list by name: the form keeps the state, the page
        // says the name and lists that name's tasks only.
        browser.goto(&format!("{url}/tasks?state=FAILED")).await?;
        browser.find(Locator::Id("name-filter")).await?.send_keys("sync_crm").await?;
        browser.find(Locator::Id("filter")).await?.click().await?;
        eventually("the FAILED sync_crm tasks", Duration::from_secs(10), || {
            let browser = browser.clone();
            async move {
                let url = browser.current_url().await?;
                if !url.query().is_some_and(|q| q.contains("name=sync_crm") && q.contains("state=FAILED")) {
                    return Ok(false);
                }
                let named = browser.find(Locator::Id("named")).await?.text().await?;
                let rows = browser.find_all(Locator::Css("#tasks tr[data-task='crm-2077']")).await?;
                Ok(named == "sync_crm" && rows.len() == 1)
            }
        })
        .await?;
        let names: Vec<String> = {
            let mut names = Vec::new();
            for cell in browser.find_all(Locator::Css("#tasks tr[data-task] td:nth-child(2)")).await? {
                names.push(cell.text().await?);
            }
            names
        };
        assert!(!names.is_empty() && names.iter().all(|n| n == "sync_crm"), "{names:?}");
        screenshot(&browser, "dashboard-tasks.png").await?;

        // The Throughput chart: an SVG with a bar drawn for the attempts
        // that ran, once the executor flushed them (every 5 s by default).
        eventually("a bar in the throughput chart", Duration::from_secs(15), || {
            let browser = browser.clone();
            let url = url.clone();
            async move {
                browser.goto(&url).await?;
                browser.find(Locator::Css("#throughput svg")).await?;
                Ok(!browser.find_all(Locator::Css("#throughput svg g.bar rect")).await?.is_empty())
            }
        })
        .await?;

        // A phone's width: the list of FAILED tasks and the overview fit;
        // wide tables scroll inside themselves, the page does not.
        browser.set_window_size(390, 844).await?;
        for page in [format!("{url}/tasks?state=FAILED"), url.clone()] {
            browser.goto(&page).await?;
            let fits = browser
                .execute("return document.documentElement.scrollWidth <= window.innerWidth + 1;", vec![])
                .await?;
            assert_eq!(fits, serde_json::json!(true), "{page} is wider than a phone");
            let row = if page.contains("/tasks?") { "#tasks" } else { "#dead-letter" };
            browser.find(Locator::Css(&format!("{row} tr[data-task='crm-2077']"))).await?;
        }
        screenshot(&browser, "dashboard-phone.png").await?;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    let closed = browser.close().await;
    drop(driver);
    server.abort();
    running.shutdown().await?;
    result?;
    closed?;
    Ok(())
}

/// Saves what the browser shows as `name` in the test's temp dir and, with
/// `UPDATE_SCREENSHOT` set, as `docs/<name>` (the pictures the docs show
/// are made by this test, not by hand).
async fn screenshot(browser: &fantoccini::Client, name: &str) -> BoxResult {
    let shot = browser.screenshot().await?;
    std::fs::write(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name), &shot)?;
    if std::env::var_os("UPDATE_SCREENSHOT").is_some() {
        std::fs::write(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs").join(name), &shot)?;
    }
    Ok(())
}

/// Whether the page's notice says `text`. Right after a click the old page
/// may still be showing while the new one loads: its notice then goes stale
/// between the find and the read, which is "not yet", not a failure (as is
/// a notice of the new page found while its document was still replacing
/// the old one).
async fn notice_says(browser: &fantoccini::Client, text: &str) -> BoxResult<bool> {
    for n in browser.find_all(Locator::Id("notice")).await? {
        match n.text().await {
            Ok(t) if t == text => return Ok(true),
            Ok(_) => {}
            Err(e) if is_stale(&e) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(false)
}

/// Whether `e` says the element belongs to a page that was replaced: the
/// standard stale-element error, or the "unknown error" Chromium 156 answers
/// instead when the node's document went away between the find and the read
/// ("Node with given id does not belong to the document").
fn is_stale(e: &fantoccini::error::CmdError) -> bool {
    match e {
        fantoccini::error::CmdError::Standard(e) => {
            e.error == fantoccini::error::ErrorStatus::StaleElementReference
                || e.message.contains("does not belong to the document")
        }
        _ => false,
    }
}
