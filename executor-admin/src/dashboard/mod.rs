//! The dashboard: server-rendered HTML pages, no build step, no external
//! script (the overview's optional auto-refresh is a few inline lines).
//! Buttons are plain forms that POST and redirect back (303).

mod attempts;
mod html;
pub(crate) mod queues;
pub(crate) mod schedules;
pub(crate) mod tasks;
mod throughput;
mod unreadable;

use crate::AdminStorage;
use std::fmt::Write as _;

use axum::{
    extract::{
        OriginalUri, Path, Query, State,
        rejection::{PathRejection, QueryRejection},
    },
    http::Uri,
    response::{Html, IntoResponse, Redirect, Response},
};
use executor_core::{ListQuery, TaskRecord, TaskState, Timestamp};
use serde::Deserialize;

use crate::{Admin, ApiError, api, views::UnreadableView};
use attempts::attempts_section;
use html::{esc, page, segment, time};
use queues::queues_table;
use schedules::schedules_table;
use throughput::throughput_section;
use unreadable::{corrupt_page, delete_form, unreadable_table};

/// Tasks read per state for the overview's tables (and the records among
/// them that do not parse).
const SCAN: usize = 200;
/// Rows shown per table.
const ROWS: usize = 50;

/// An HTML error page with the API's status and code.
pub(crate) struct HtmlError(ApiError);

impl From<ApiError> for HtmlError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl From<executor_core::Error> for HtmlError {
    fn from(e: executor_core::Error) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for HtmlError {
    fn into_response(self) -> Response {
        let body = format!(
            "<h1>{} {}</h1><div class=\"notice bad\">{}</div>",
            self.0.status.as_u16(),
            esc(&self.0.body.code),
            esc(&self.0.body.message)
        );
        (self.0.status, Html(page("Error", "", &body, false))).into_response()
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Notice {
    notice: Option<String>,
    bad: Option<String>,
    /// Seconds between auto-refreshes of the overview, 1 to 3,600.
    refresh: Option<u32>,
    /// The throughput chart's window in minutes, 1 to 1,440 (default 60).
    minutes: Option<u32>,
    /// The throughput chart's task name (default: all).
    name: Option<String>,
}

/// `GET /`: counts, throughput per minute (an SVG chart), named queues
/// with pause and resume buttons, the dead letter with requeue buttons,
/// records that do not parse with delete buttons, recent failures, cron
/// schedules with pause and resume buttons. A bad record is listed, never
/// an error page (no neighbour harm).
#[utoipa::path(get, path = "/", tag = "dashboard",
    params(
        ("notice" = Option<String>, Query, description = "Message shown on top (set by redirects)"),
        ("bad" = Option<String>, Query, description = "Error message shown on top (set by redirects)"),
        ("refresh" = Option<u32>, Query, description = "Seconds between auto-refreshes, 1 to 3600"),
        ("minutes" = Option<u32>, Query, description = "The throughput chart's window, 1 to 1440 minutes \
            (default 60); other values show the default"),
        ("name" = Option<String>, Query, description = "The throughput chart's task name (default: all)"),
    ),
    responses(
        (status = 200, description = "Dashboard page", content_type = "text/html", body = String),
        (status = 503, description = "Store unavailable", content_type = "text/html", body = String),
    ))]
pub(crate) async fn overview<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    notice: Result<Query<Notice>, QueryRejection>,
) -> Result<Html<String>, HtmlError> {
    // A notice only decorates the page: a query that does not parse (a
    // repeated key, say) shows the page without one rather than a 400.
    let notice = notice
        .map_or(Notice { notice: None, bad: None, refresh: None, minutes: None, name: None }, |Query(n)| n);
    let refresh = notice.refresh.filter(|s| (1..=3_600).contains(s));
    let base = html::base(&original, &uri);
    let client = admin.client();
    let counts = client.counts().await?;
    let info = api::info_view(&admin).await?;

    let mut dead = Vec::new();
    let mut failures = Vec::new();
    let mut unreadable = Vec::new();
    for state in TaskState::ALL {
        let page = client.list(ListQuery::new(state, SCAN)).await?;
        unreadable.extend(page.unreadable.into_iter().map(|u| UnreadableView::new(state, u)));
        if state.is_terminal() && !state.is_dead_letter() {
            continue;
        }
        for task in page.tasks {
            if task.last_error.is_some() {
                failures.push(task.clone());
            }
            if state.is_dead_letter() {
                dead.push(task);
            }
        }
    }
    let latest = |t: &TaskRecord| t.finished_at.or(t.started_at).unwrap_or(t.created_at);
    dead.sort_by_key(|t| std::cmp::Reverse(latest(t)));
    failures.sort_by_key(|t| std::cmp::Reverse(latest(t)));

    let mut b = String::new();
    let _ = write!(b, "<h1>Namespace <code>{}</code></h1><div class=\"meta\">", esc(&info.namespace));
    match &info.leader {
        Some(l) => {
            let _ = write!(b, "Leader: <code>{}</code> (term {})", esc(&l.worker), l.token);
        }
        None => b.push_str("<strong>No leader</strong>: expired leases are not being recovered"),
    }
    if let Some(w) = &info.worker {
        let _ = write!(
            b,
            " · This worker: <code>{}</code> · Handlers: {}",
            esc(&w.id),
            esc(&w.handlers.join(", "))
        );
    }
    if info.handler_sets > 1 {
        let _ = write!(
            b,
            " · <strong>{} workers run {} different handler sets</strong> (a rolling deploy, or two services \
             sharing this namespace): {}",
            info.workers.len(),
            info.handler_sets,
            esc(&info
                .workers
                .iter()
                .map(|w| format!("{} [{}]", w.id, w.handlers.join(", ")))
                .collect::<Vec<_>>()
                .join("; "))
        );
    } else if !info.workers.is_empty() {
        let _ = write!(b, " · Workers: {}", info.workers.len());
    }
    b.push_str("</div>");
    if let Some(text) = &notice.notice {
        let _ = write!(b, "<div class=\"notice\" id=\"notice\">{}</div>", esc(text));
    }
    if let Some(text) = &notice.bad {
        let _ = write!(b, "<div class=\"notice bad\" id=\"notice\">{}</div>", esc(text));
    }

    b.push_str(&tasks::find_form(&base));
    b.push_str("<div class=\"cards\" id=\"counts\">");
    for state in TaskState::ALL {
        let class = if state.is_dead_letter() {
            "card dead"
        } else if state == TaskState::Completed {
            "card ok"
        } else {
            "card"
        };
        let _ = write!(
            b,
            "<div class=\"{class}\" data-state=\"{s}\"><div class=\"n\">{n}</div><div class=\"s\">\
             <a href=\"{base}/tasks?state={s}\">{s}</a></div></div>",
            s = state.as_str(),
            n = counts.get(state),
            base = esc(&base),
        );
    }
    b.push_str("</div>");

    let minutes = crate::history::minutes(notice.minutes).unwrap_or(crate::history::DEFAULT_MINUTES);
    let name = notice.name.as_deref().filter(|n| !n.is_empty());
    throughput_section(&mut b, &base, crate::history::window(&admin, minutes, name).await)?;

    queues_table(&mut b, &base, crate::queues::views(&admin).await)?;

    let total_dead: u64 = TaskState::ALL.iter().filter(|s| s.is_dead_letter()).map(|s| counts.get(*s)).sum();
    let _ = write!(b, "<h2>Dead letter ({total_dead})");
    if total_dead > 0 {
        let _ = write!(
            b,
            " <form method=\"post\" action=\"{}/dead-letter/requeue\"><button class=\"primary\" \
             id=\"requeue-all\">Requeue all</button></form>",
            esc(&base)
        );
    }
    b.push_str("</h2>");
    if dead.is_empty() {
        b.push_str("<div class=\"empty\" id=\"dead-letter\">The dead letter is empty.</div>");
    } else {
        b.push_str(
            "<table id=\"dead-letter\"><tr><th>Task</th><th>Name</th><th>State</th><th>Attempts</th>\
             <th>Finished</th><th>Last error</th><th></th></tr>",
        );
        for t in dead.iter().take(ROWS) {
            let id = segment(t.id.as_str());
            let _ = write!(
                b,
                "<tr data-task=\"{eid}\"><td class=\"id\"><a href=\"{base}/tasks/{id}\">{eid}</a></td><td>{name}</td>\
                 <td><span class=\"state {st}\">{st}</span></td><td>{a}/{m}</td><td>{fin}</td>\
                 <td class=\"err\">{err}</td><td><form method=\"post\" action=\"{base}/tasks/{id}/requeue\">\
                 <button class=\"primary\" data-requeue=\"{eid}\">Requeue</button></form></td></tr>",
                eid = esc(t.id.as_str()),
                base = esc(&base),
                name = esc(&t.name),
                st = t.state.as_str(),
                a = t.attempts,
                m = t.max_attempts,
                fin = time(t.finished_at),
                err = esc(t.last_error.as_deref().unwrap_or("")),
            );
        }
        b.push_str("</table>");
    }

    unreadable_table(&mut b, &base, &unreadable);

    b.push_str("<h2>Recent failures</h2>");
    if failures.is_empty() {
        b.push_str(
            "<div class=\"empty\">No failed attempts among waiting, running or dead-lettered tasks.</div>",
        );
    } else {
        b.push_str(
            "<table id=\"failures\"><tr><th>Task</th><th>Name</th><th>State</th><th>Attempts</th>\
             <th>Last attempt</th><th>Last error</th></tr>",
        );
        for t in failures.iter().take(ROWS) {
            let _ = write!(
                b,
                "<tr><td class=\"id\"><a href=\"{base}/tasks/{id}\">{eid}</a></td><td>{name}</td>\
                 <td><span class=\"state {st}\">{st}</span></td><td>{a}/{m}</td><td>{at}</td>\
                 <td class=\"err\">{err}</td></tr>",
                base = esc(&base),
                id = segment(t.id.as_str()),
                eid = esc(t.id.as_str()),
                name = esc(&t.name),
                st = t.state.as_str(),
                a = t.attempts,
                m = t.max_attempts,
                at = time(t.started_at),
                err = esc(t.last_error.as_deref().unwrap_or("")),
            );
        }
        b.push_str("</table>");
    }

    schedules_table(&mut b, &base, client.schedules().list().await)?;
    let _ = write!(b, "<p class=\"meta\" id=\"rendered\">Rendered {}. ", time(Some(Timestamp::now_system())));
    // axum routes a nested router's root at `/admin`, not `/admin/`.
    let home = if base.is_empty() { "/" } else { base.as_str() };
    match refresh {
        Some(secs) => {
            let _ = write!(
                b,
                "Refreshing every {secs} s (<a href=\"{}\" id=\"refresh-off\">stop</a>).</p>{}",
                esc(home),
                html::refresh_script(secs * 1000)
            );
        }
        None => {
            let _ =
                write!(b, "<a href=\"{}?refresh=5\" id=\"refresh-on\">Refresh every 5 s</a>.</p>", esc(home));
        }
    }
    Ok(Html(page("Reliable Executor", &base, &b, admin.is_read_only())))
}

/// `GET /tasks/{id}`: every field of the record.
#[utoipa::path(get, path = "/tasks/{id}", tag = "dashboard",
    params(("id" = String, Path, description = "Task id: 1 to 191 bytes of UTF-8, no whitespace or control characters",
        min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$")),
    responses(
        (status = 200, description = "Task page", content_type = "text/html", body = String),
        (status = 404, description = "No such task", content_type = "text/html", body = String),
        (status = 422, description = "Not a valid id", content_type = "text/html", body = String),
        (status = 500, description = "The record does not parse: the reason and a Delete button",
            content_type = "text/html", body = String),
        (status = 503, description = "Store unavailable", content_type = "text/html", body = String),
    ))]
pub(crate) async fn task<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, HtmlError> {
    let base = html::base(&original, &uri);
    let Path(id) = path.map_err(ApiError::from)?;
    let id = api::task_id(&id)?;
    let t = match admin.client().status(&id).await {
        Ok(Some(t)) => t,
        Ok(None) => return Err(executor_core::Error::NotFound(id).into()),
        Err(executor_core::Error::Corrupt { reason, .. }) => {
            return Ok(corrupt_page(&base, &id, &reason, admin.is_read_only()));
        }
        Err(e) => return Err(e.into()),
    };
    let payload = serde_json::from_slice::<serde_json::Value>(&t.payload)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| String::from_utf8_lossy(&t.payload).into_owned());
    let eid = esc(t.id.as_str());
    let action = format!("{}/tasks/{}", esc(&base), segment(t.id.as_str()));
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>Task <code>{eid}</code> <span class=\"state {s}\">{s}</span></h1>",
        s = t.state.as_str()
    );
    if t.state.is_dead_letter() {
        let _ = write!(
            b,
            "<form method=\"post\" action=\"{action}/requeue\"><button class=\"primary\" data-requeue=\"{eid}\">\
             Requeue</button></form> "
        );
    }
    if t.state.is_waiting() {
        let _ = write!(
            b,
            "<form method=\"post\" action=\"{action}/run-now\"><button class=\"primary\" data-run-now=\"{eid}\">\
             Run now</button></form> "
        );
    }
    if t.state.is_waiting() || t.state == TaskState::Running {
        let _ = write!(
            b,
            "<form method=\"post\" action=\"{action}/cancel\"><button class=\"danger\">Cancel</button></form> "
        );
    }
    b.push_str(&delete_form(&action, &eid));
    let opt = |v: Option<&str>| v.map_or_else(|| "—".to_owned(), esc);
    let rows: [(&str, String); 18] = [
        ("Name", esc(&t.name)),
        ("State", t.state.as_str().to_owned()),
        ("Queue", esc(t.queue.as_str())),
        ("Priority", format!("{} (0 to 9, higher first)", t.priority)),
        ("Attempts", format!("{} of {}", t.attempts, t.max_attempts)),
        ("Last error", opt(t.last_error.as_deref())),
        ("Created", time(Some(t.created_at))),
        ("Due", time(Some(t.due_at))),
        ("Last attempt started", time(t.started_at)),
        ("Finished", time(t.finished_at)),
        ("Deadline (max_duration)", time(t.deadline)),
        ("Attempt timeout", t.timeout.map_or_else(|| "—".to_owned(), |d| format!("{d:?}"))),
        ("Worker (lease holder)", opt(t.worker.as_ref().map(|w| w.as_str()))),
        ("Lease until", time(t.lease_until)),
        ("Fence", t.fence.to_string()),
        ("Cancel requested", t.cancel_requested.to_string()),
        ("Debounce key", opt(t.debounce_key.as_deref())),
        (
            "Retry policy",
            t.retry.as_ref().map_or_else(|| "handler default".to_owned(), |r| esc(&format!("{r:?}"))),
        ),
    ];
    b.push_str("<h2>Record</h2><dl id=\"record\">");
    for (k, v) in rows {
        let _ = write!(b, "<dt>{k}</dt><dd>{v}</dd>");
    }
    b.push_str("</dl>");
    b.push_str(&attempts_section(&t));
    let _ = write!(b, "<h2>Payload</h2><pre id=\"payload\">{}</pre>", esc(&payload));
    Ok(Html(page(&format!("Task {}", t.id.as_str()), &base, &b, admin.is_read_only())).into_response())
}

fn back(base: &str, notice: Result<String, String>) -> Redirect {
    let (key, text) = match notice {
        Ok(text) => ("notice", text),
        Err(text) => ("bad", text),
    };
    let home = if base.is_empty() { "/" } else { base };
    Redirect::to(&format!("{home}?{key}={}", segment(&text)))
}

/// What every task form does: the id from the path, checked; `act` on it
/// (given the task and the id as written); back to the overview with the
/// notice `act` answered or the error.
async fn on_task<Fut>(
    original: &Uri,
    uri: &Uri,
    path: Result<Path<String>, PathRejection>,
    act: impl FnOnce(executor_core::TaskId, String) -> Fut,
) -> Redirect
where
    Fut: Future<Output = Result<String, ApiError>>,
{
    let base = html::base(original, uri);
    let Path(id) = match path {
        Ok(path) => path,
        Err(e) => return back(&base, Err(ApiError::from(e).body.message)),
    };
    let result = match api::task_id(&id) {
        Ok(task) => act(task, id).await,
        Err(e) => Err(e),
    };
    back(&base, result.map_err(|e| e.body.message))
}

/// `POST /tasks/{id}/requeue` (form): requeue, then back to the overview.
#[utoipa::path(post, path = "/tasks/{id}/requeue", tag = "dashboard",
    params(("id" = String, Path, description = "Task id")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn requeue<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    on_task(&original, &uri, path, |task, id| async move {
        admin.client().requeue(&task).await.map_err(ApiError::from).map(|()| format!("Requeued {id}."))
    })
    .await
}

/// `POST /tasks/{id}/run-now` (form): make a waiting task due now, then
/// back to the overview.
#[utoipa::path(post, path = "/tasks/{id}/run-now", tag = "dashboard",
    params(("id" = String, Path, description = "Task id")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn run_now<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    on_task(&original, &uri, path, |task, id| async move {
        admin.client().run_now(&task).await.map_err(ApiError::from).map(|()| format!("{id} is due now."))
    })
    .await
}

/// `POST /tasks/{id}/cancel` (form): cancel, then back to the overview.
#[utoipa::path(post, path = "/tasks/{id}/cancel", tag = "dashboard",
    params(("id" = String, Path, description = "Task id")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn cancel<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    on_task(&original, &uri, path, |task, id| async move {
        admin.client().cancel(&task).await.map_err(ApiError::from).map(|o| format!("Cancel of {id}: {o:?}."))
    })
    .await
}

/// `POST /tasks/{id}/delete` (form): delete in any state, readable or not,
/// then back to the overview.
#[utoipa::path(post, path = "/tasks/{id}/delete", tag = "dashboard",
    params(("id" = String, Path, description = "Task id")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn delete<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    on_task(&original, &uri, path, |task, id| async move {
        api::delete_task(&admin, task).await.map(|_| format!("Deleted {id}."))
    })
    .await
}

/// `POST /dead-letter/requeue` (form): requeue the dead letter (bounded).
#[utoipa::path(post, path = "/dead-letter/requeue", tag = "dashboard",
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn requeue_all<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
) -> Redirect {
    let base = html::base(&original, &uri);
    let notice = match api::requeue_dead_letter(&admin, api::DEFAULT_REQUEUE_ALL).await {
        Ok(r) => requeue_all_notice(&r),
        Err(e) => Err(e.body.message),
    };
    back(&base, notice)
}

/// Failures named in the requeue-all notice; the rest are counted.
const NAMED: usize = 5;

/// What a requeue of the dead letter did, in one line: an error notice
/// when a task failed or the walk stopped early.
fn requeue_all_notice(r: &crate::RequeueAllResponse) -> Result<String, String> {
    let mut text = format!("Requeued {} tasks.", r.requeued);
    if !r.errors.is_empty() {
        let named: Vec<_> =
            r.errors.iter().take(NAMED).map(|f| format!("{} ({})", f.id, f.message)).collect();
        let _ = write!(text, " {} failed: {}", r.errors.len(), named.join("; "));
        if r.errors.len() > NAMED {
            let _ = write!(text, "; and {} more", r.errors.len() - NAMED);
        }
        text.push('.');
    }
    if !r.unreadable.is_empty() {
        let s = if r.unreadable.len() == 1 { "" } else { "s" };
        let _ =
            write!(text, " {} unreadable record{s} skipped (see Unreadable records).", r.unreadable.len());
    }
    if let Some(e) = &r.interrupted {
        let _ = write!(text, " Stopped early: {}.", e.message);
    }
    if r.more {
        text.push_str(" More remain: press again.");
    }
    if r.errors.is_empty() && r.interrupted.is_none() { Ok(text) } else { Err(text) }
}
