//! Cron schedules on the dashboard: the overview's table of them, and the
//! Pause and Resume forms.

use crate::AdminStorage;
use std::fmt::Write as _;

use axum::{
    extract::{OriginalUri, Path, State, rejection::PathRejection},
    http::Uri,
    response::Redirect,
};
use executor_core::{Error, schedule::ScheduleInfo};

use super::{
    HtmlError, ROWS, back,
    html::{self, esc, segment, time},
};
use crate::{Admin, ApiError, schedules};

/// The Schedules section: each schedule with its expression and zone, next
/// fire, last tick, the state of its last task, and a Pause or Resume
/// button. A store without schedules gets a line saying so, not an error
/// page: the rest of the dashboard still reads.
pub(super) fn schedules_table(
    b: &mut String,
    base: &str,
    listed: Result<Vec<ScheduleInfo>, Error>,
) -> Result<(), HtmlError> {
    let listed = match listed {
        Ok(listed) => listed,
        Err(Error::Unsupported { .. }) => {
            b.push_str(
                "<h2>Schedules</h2><div class=\"empty\" id=\"schedules\">This store keeps no cron \
                 schedules.</div>",
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let _ = write!(b, "<h2>Schedules ({})</h2>", listed.len());
    if listed.is_empty() {
        b.push_str("<div class=\"empty\" id=\"schedules\">No cron schedules.</div>");
        return Ok(());
    }
    b.push_str(
        "<table id=\"schedules\"><tr><th>Schedule</th><th>Task</th><th>Cron</th><th>Next fire</th>\
         <th>Last tick</th><th>Last task</th><th>Status</th><th></th></tr>",
    );
    let base = esc(base);
    for info in listed.iter().take(ROWS) {
        let s = &info.schedule;
        let ename = esc(&s.name);
        let action = format!("{base}/schedules/{}", segment(&s.name));
        let last = match (&info.last_task, info.last_state) {
            (Some(id), state) => format!(
                "<a href=\"{base}/tasks/{}\">{}</a> <span class=\"state {st}\">{st}</span>",
                segment(id.as_str()),
                esc(id.as_str()),
                st = state.map_or("gone", |s| s.as_str()),
            ),
            (None, _) => "—".to_owned(),
        };
        // Paused is the state that needs an operator, so its button stands out.
        let (status, form) = if info.paused {
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
            "<tr data-schedule=\"{ename}\" data-paused=\"{paused}\"><td class=\"id\">{ename}</td>\
             <td>{task}</td><td><code>{cron}</code> ({zone})</td><td>{next}</td><td>{tick}</td>\
             <td>{last}</td><td>{status}</td><td>{form}</td></tr>",
            paused = info.paused,
            task = esc(&s.task),
            cron = esc(&s.cron),
            zone = esc(&s.timezone),
            next = time(info.next_fire),
            tick = time(Some(info.last_tick)),
        );
    }
    b.push_str("</table>");
    Ok(())
}

/// `POST /schedules/{name}/pause` (form): pause, then back to the overview.
#[utoipa::path(post, path = "/schedules/{name}/pause", tag = "dashboard",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn pause<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    set_paused(&admin, &html::base(&original, &uri), path, true).await
}

/// `POST /schedules/{name}/resume` (form): resume, then back to the overview.
#[utoipa::path(post, path = "/schedules/{name}/resume", tag = "dashboard",
    params(("name" = String, Path, description = "Schedule name")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn resume<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Redirect {
    set_paused(&admin, &html::base(&original, &uri), path, false).await
}

async fn set_paused<S: AdminStorage>(
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
    let result = schedules::set_paused(admin, &name, paused).await;
    back(base, result.map(|_| format!("{done} schedule {name}.")).map_err(|e| e.body.message))
}
