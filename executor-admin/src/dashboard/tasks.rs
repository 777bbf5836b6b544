//! `GET /tasks`: one state's tasks a page at a time, of every name or one,
//! and finding a task by its id. Pages follow the store's cursor
//! (`Client::list`, filtered by name in the store), so the tenth page of a
//! million costs what the first does.

use crate::AdminStorage;
use std::fmt::Write as _;

use axum::{
    extract::{OriginalUri, Query, State, rejection::QueryRejection},
    http::Uri,
    response::{Html, IntoResponse, Redirect, Response},
};
use executor_core::{ListQuery, TaskState};
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
    name: Option<String>,
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

/// `GET /tasks?state=FAILED&name=…&cursor=…`: a page of one state's tasks
/// (of one name with `name`), in the store's order, with a link to the next
/// page; the states with their counts as tabs; a form that filters by name;
/// records of the page that do not parse.
/// `GET /tasks?id=…` goes to that task's page (303).
#[utoipa::path(get, path = "/tasks", tag = "dashboard",
    params(
        ("state" = Option<String>, Query, description = "The state to list (default PENDING)"),
        ("cursor" = Option<String>, Query, description = "The `next` of the previous page"),
        ("name" = Option<String>, Query, description = "Only tasks of this name. Empty: every name",
            max_length = 191),
        ("id" = Option<String>, Query, description = "Find a task: redirect to its page. Empty: list instead",
            min_length = 1, max_length = 191, pattern = r"^[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$"),
    ),
    responses(
        (status = 200, description = "A page of tasks", content_type = "text/html", body = String),
        (status = 303, description = "Found: to the task's page"),
        (status = 422, description = "A bad state, id, name or cursor, or a query that does not parse", content_type = "text/html", body = String),
        (status = 503, description = "Store unavailable", content_type = "text/html", body = String),
    ))]
pub(crate) async fn list<S: AdminStorage>(
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
    let name = q.name.filter(|n| !n.is_empty());
    let mut query = ListQuery::new(state, PAGE);
    query.cursor = q.cursor.filter(|c| !c.is_empty());
    query.name.clone_from(&name);
    let first = query.cursor.is_none();
    let client = admin.client();
    let page_of = client.list(query).await?;
    let counts = client.counts().await?;
    // `&name=…` for the links that keep the filter.
    let and_name = name.as_deref().map(|n| format!("&amp;name={}", segment(n))).unwrap_or_default();

    let mut b = String::new();
    let _ = write!(b, "<h1>Tasks <span class=\"state {s}\">{s}</span>", s = state.as_str());
    if let Some(n) = &name {
        let _ = write!(b, " named <code id=\"named\">{}</code>", esc(n));
    }
    b.push_str("</h1>");
    b.push_str(&find_form(&base));
    let _ = write!(
        b,
        "<form method=\"get\" action=\"{base}/tasks\" class=\"find\" id=\"by-name\">\
         <input type=\"hidden\" name=\"state\" value=\"{st}\"><input name=\"name\" id=\"name-filter\" \
         placeholder=\"task name\" aria-label=\"task name\" value=\"{value}\"><button id=\"filter\">Filter</button>{clear}</form>",
        base = esc(&base),
        st = state.as_str(),
        value = esc(name.as_deref().unwrap_or("")),
        clear = if name.is_some() {
            format!(
                " <a href=\"{}/tasks?state={}\" id=\"all-names\">every name</a>",
                esc(&base),
                state.as_str()
            )
        } else {
            String::new()
        },
    );
    b.push_str("<nav class=\"tabs\" id=\"states\">");
    for s in TaskState::ALL {
        let _ = write!(
            b,
            "<a href=\"{base}/tasks?state={st}{and_name}\"{cur}>{st} <span class=\"n\">{n}</span></a>",
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
            match (first, &name, &page_of.next) {
                (_, Some(_), Some(_)) => "None of this name in this stretch of the state: see the next page.",
                (true, Some(_), None) => "No task of this name is in this state.",
                (true, None, _) => "No task is in this state.",
                (false, _, _) => "No more tasks.",
            }
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
                 <td><a href=\"{base}/tasks?state={st}&amp;name={name_q}\">{name}</a></td><td>{queue}</td><td>{prio}</td><td>{a}/{m}</td><td>{due}</td><td>{start}</td>\
                 <td>{fin}</td><td class=\"err\">{err}</td></tr>",
                eid = esc(t.id.as_str()),
                base = esc(&base),
                id = segment(t.id.as_str()),
                name = esc(&t.name),
                name_q = segment(&t.name),
                st = state.as_str(),
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
            "<a href=\"{}/tasks?state={}{and_name}\" id=\"first-page\">First page</a> ",
            esc(&base),
            state.as_str()
        );
    }
    if let Some(next) = &page_of.next {
        let _ = write!(
            b,
            "<a href=\"{}/tasks?state={}{and_name}&amp;cursor={}\" id=\"next-page\">Next page →</a>",
            esc(&base),
            state.as_str(),
            segment(next)
        );
    }
    b.push_str("</p>");
    Ok(Html(page(&format!("Tasks {}", state.as_str()), &base, &b, admin.is_read_only())).into_response())
}
