//! `GET /tasks`: one state's tasks a page at a time, and finding a task by
//! its id. Pages follow the store's cursor (`Client::list`), so the tenth
//! page of a million costs what the first does.

use std::fmt::Write as _;

use axum::{
    extract::{OriginalUri, Query, State, rejection::QueryRejection},
    http::Uri,
    response::{Html, IntoResponse, Redirect, Response},
};
use executor_core::{ListQuery, TaskState, storage::Storage};
use serde::Deserialize;

use super::{
    HtmlError,
    html::{self, esc, page, segment, time},
    unreadable_table,
};
use crate::{Admin, ApiError, api, views::UnreadableView};

/// Tasks per page.
const PAGE: usize = 50;

#[derive(Debug, Deserialize)]
pub(crate) struct TasksQuery {
    state: Option<String>,
    cursor: Option<String>,
    id: Option<String>,
}

/// The form that finds a task by id (a `GET`, so a read-only dashboard
/// keeps it).
pub(super) fn find_form(base: &str) -> String {
    format!(
        "<form method=\"get\" action=\"{}/tasks\" class=\"find\"><input name=\"id\" id=\"find-id\" \
         placeholder=\"task id\" aria-label=\"task id\" required><button id=\"find\">Find</button></form>",
        esc(base)
    )
}

/// `GET /tasks?state=FAILED&cursor=…`: a page of one state's tasks, newest
/// first within the store's order, with a link to the next page; the
/// states with their counts as tabs; records of the page that do not parse.
/// `GET /tasks?id=…` goes to that task's page (303).
#[utoipa::path(get, path = "/tasks", tag = "dashboard",
    params(
        ("state" = Option<String>, Query, description = "The state to list (default PENDING)"),
        ("cursor" = Option<String>, Query, description = "The `next` of the previous page"),
        ("id" = Option<String>, Query, description = "Find a task: redirect to its page. Empty: list instead",
            min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$"),
    ),
    responses(
        (status = 200, description = "A page of tasks", content_type = "text/html", body = String),
        (status = 303, description = "Found: to the task's page"),
        (status = 422, description = "A bad state, id or cursor, or a query that does not parse", content_type = "text/html", body = String),
        (status = 503, description = "Store unavailable", content_type = "text/html", body = String),
    ))]
pub(crate) async fn list<S: Storage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    query: Result<Query<TasksQuery>, QueryRejection>,
) -> Result<Response, HtmlError> {
    let base = html::base(&original, &uri);
    let Query(q) = query.map_err(ApiError::from)?;
    if let Some(id) = q.id.as_deref().filter(|id| !id.is_empty()) {
        let id = api::task_id(id)?;
        return Ok(Redirect::to(&format!("{base}/tasks/{}", segment(id.as_str()))).into_response());
    }
    let state: TaskState = q.state.as_deref().unwrap_or("PENDING").parse().map_err(ApiError::from)?;
    let mut query = ListQuery::new(state, PAGE);
    query.cursor = q.cursor.filter(|c| !c.is_empty());
    let first = query.cursor.is_none();
    let client = admin.client();
    let page_of = client.list(query).await?;
    let counts = client.counts().await?;

    let mut b = String::new();
    let _ = write!(b, "<h1>Tasks <span class=\"state {s}\">{s}</span></h1>", s = state.as_str());
    b.push_str(&find_form(&base));
    b.push_str("<nav class=\"tabs\" id=\"states\">");
    for s in TaskState::ALL {
        let _ = write!(
            b,
            "<a href=\"{base}/tasks?state={st}\"{cur}>{st} <span class=\"n\">{n}</span></a>",
            base = esc(&base),
            st = s.as_str(),
            cur = if s == state { " class=\"current\"" } else { "" },
            n = counts.get(s),
        );
    }
    b.push_str("</nav>");
    if page_of.tasks.is_empty() {
        let _ = write!(
            b,
            "<div class=\"empty\" id=\"tasks\">{}</div>",
            if first { "No task is in this state." } else { "No more tasks." }
        );
    } else {
        b.push_str(
            "<table id=\"tasks\"><tr><th>Task</th><th>Name</th><th>Queue</th><th>Priority</th>\
             <th>Attempts</th><th>Due</th><th>Started</th><th>Finished</th><th>Last error</th></tr>",
        );
        for t in &page_of.tasks {
            let _ = write!(
                b,
                "<tr data-task=\"{eid}\"><td class=\"id\"><a href=\"{base}/tasks/{id}\">{eid}</a></td>\
                 <td>{name}</td><td>{queue}</td><td>{prio}</td><td>{a}/{m}</td><td>{due}</td><td>{start}</td>\
                 <td>{fin}</td><td class=\"err\">{err}</td></tr>",
                eid = esc(t.id.as_str()),
                base = esc(&base),
                id = segment(t.id.as_str()),
                name = esc(&t.name),
                queue = esc(t.queue.as_str()),
                prio = t.priority,
                a = t.attempts,
                m = t.max_attempts,
                due = time(Some(t.due_at)),
                start = time(t.started_at),
                fin = time(t.finished_at),
                err = esc(t.last_error.as_deref().unwrap_or("")),
            );
        }
        b.push_str("</table>");
    }
    let unreadable: Vec<UnreadableView> =
        page_of.unreadable.into_iter().map(|u| UnreadableView::new(state, u)).collect();
    unreadable_table(&mut b, &base, &unreadable);
    b.push_str("<p class=\"pager\">");
    if !first {
        let _ = write!(
            b,
            "<a href=\"{}/tasks?state={}\" id=\"first-page\">First page</a> ",
            esc(&base),
            state.as_str()
        );
    }
    if let Some(next) = &page_of.next {
        let _ = write!(
            b,
            "<a href=\"{}/tasks?state={}&amp;cursor={}\" id=\"next-page\">Next page →</a>",
            esc(&base),
            state.as_str(),
            segment(next)
        );
    }
    b.push_str("</p>");
    Ok(Html(page(&format!("Tasks {}", state.as_str()), &base, &b, admin.is_read_only())).into_response())
}
