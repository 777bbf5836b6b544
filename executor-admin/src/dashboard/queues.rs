//! Named queues on the dashboard: the overview's table of them (depth,
//! due tasks, latency, paused), and the Pause and Resume forms.

use std::fmt::Write as _;

use axum::{
    extract::{OriginalUri, Path, State, rejection::PathRejection},
    http::Uri,
    response::Redirect,
};
use executor_core::{Error, storage::Storage};

use super::{
    HtmlError, ROWS, back,
    html::{self, esc, segment},
};
use crate::{Admin, ApiError, queues, views::QueueView};

/// The Queues section: each queue with waiting tasks or paused, how many
/// of them are due, how long the oldest due one has waited, and a Pause or
/// Resume button. A store without queue controls gets a line saying so,
/// not an error page: the rest of the dashboard still reads.
pub(super) fn queues_table(
    b: &mut String,
    base: &str,
    listed: Result<Vec<QueueView>, Error>,
) -> Result<(), HtmlError> {
    let listed = match listed {
        Ok(listed) => listed,
        Err(Error::Unsupported { .. }) => {
            b.push_str(
                "<h2>Queues</h2><div class=\"empty\" id=\"queues\">This store has no queue controls.</div>",
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let _ = write!(b, "<h2>Queues ({})</h2>", listed.len());
    if listed.is_empty() {
        b.push_str("<div class=\"empty\" id=\"queues\">No queue has waiting tasks or is paused.</div>");
        return Ok(());
    }
    b.push_str(
        "<table id=\"queues\"><tr><th>Queue</th><th>Waiting</th><th>Due</th><th>Latency</th>\
         <th>Status</th><th></th></tr>",
    );
    let base = esc(base);
    for q in listed.iter().take(ROWS) {
        let ename = esc(&q.queue);
        let action = format!("{base}/queues/{}", segment(&q.queue));
        // Paused is the state that needs an operator, so its button stands out.
        let (status, form) = if q.paused {
            (
                "<strong>paused</strong>",
                format!(
                    "<form method=\"post\" action=\"{action}/resume\"><button class=\"primary\" \
                     data-resume=\"{ename}\">Resume</button></form>"
                ),
            )
        } else {
            (
                "active",
                format!(
                    "<form method=\"post\" action=\"{action}/pause\"><button data-pause=\"{ename}\">\
                     Pause</button></form>"
                ),
            )
        };
        let _ = write!(
            b,
            "<tr data-queue=\"{ename}\" data-paused=\"{paused}\"><td class=\"id\">{ename}</td>\
             <td>{waiting}</td><td>{due}</td><td title=\"{title}\">{latency}</td><td>{status}</td>\
             <td>{form}</td></tr>",
            paused = q.paused,
            waiting = q.waiting,
            due = q.due,
            title = q.latency_ms.map_or_else(|| "no task is due".to_owned(), |ms| format!("{ms} ms")),
            latency = q.latency_ms.map_or_else(|| "—".to_owned(), html::millis),
        );
    }
    b.push_str("</table>");
    Ok(())
}

/// `POST /queues/{name}/pause` (form): pause, then back to the overview.
#[utoipa::path(post, path = "/queues/{name}/pause", tag = "dashboard",
    params(("name" = String, Path, description = "Queue name")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn pause<S: Storage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    set_paused(&admin, &html::base(&original, &uri), path, true).await
}

/// `POST /queues/{name}/resume` (form): resume, then back to the overview.
#[utoipa::path(post, path = "/queues/{name}/resume", tag = "dashboard",
    params(("name" = String, Path, description = "Queue name")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn resume<S: Storage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    set_paused(&admin, &html::base(&original, &uri), path, false).await
}

async fn set_paused<S: Storage>(
    admin: &Admin<S>,
    base: &str,
    path: Result<Path<String>, PathRejection>,
    paused: bool,
) -> Redirect {
    let Path(name) = match path {
        Ok(path) => path,
        Err(e) => return back(base, Err(ApiError::from(e).body.message)),
    };
    let done = if paused { "Paused" } else { "Resumed" };
    let result = queues::set_paused(admin, &name, paused).await;
    back(base, result.map(|_| format!("{done} queue {name}.")).map_err(|e| e.body.message))
}
