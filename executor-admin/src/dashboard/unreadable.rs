//! Records that do not parse, on the dashboard: the overview's table of
//! them, the page of one, and the Delete button that is the way out.

use std::fmt::Write as _;

use axum::response::{Html, IntoResponse, Response};
use executor_core::TaskId;

use super::{
    ROWS, SCAN,
    html::{esc, page, segment},
};
use crate::{ApiError, views::UnreadableView};

/// The records that do not parse among the first [`SCAN`] of each state,
/// each with its reason and a Delete button (when its id is a valid one).
pub(super) fn unreadable_table(b: &mut String, base: &str, unreadable: &[UnreadableView]) {
    if unreadable.is_empty() {
        return;
    }
    let _ = write!(
        b,
        "<h2>Unreadable records ({})</h2><p class=\"meta\">Stored records that do not parse (edited by hand, \
         written by a newer version), among the first {SCAN} of each state. The other tasks are not affected. \
         Inspect one in the store, or delete it.</p><table id=\"unreadable\"><tr><th>Task</th><th>State</th>\
         <th>Reason</th><th></th></tr>",
        unreadable.len()
    );
    let base = esc(base);
    for u in unreadable.iter().take(ROWS) {
        let eid = esc(&u.id);
        let (link, action) = if TaskId::new(u.id.as_str()).is_ok() {
            let id = segment(&u.id);
            (
                format!("<a href=\"{base}/tasks/{id}\">{eid}</a>"),
                delete_form(&format!("{base}/tasks/{id}"), &eid),
            )
        } else {
            (eid.clone(), "not a valid id: remove it in the store".to_owned())
        };
        let _ = write!(
            b,
            "<tr data-unreadable=\"{eid}\"><td class=\"id\">{link}</td><td><span class=\"state {st}\">{st}</span></td>\
             <td class=\"err\">{reason}</td><td>{action}</td></tr>",
            st = esc(&u.state),
            reason = esc(&u.reason),
        );
    }
    b.push_str("</table>");
}

/// The Delete button of a task; `action` is the task's escaped dashboard path.
pub(super) fn delete_form(action: &str, eid: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{action}/delete\"><button class=\"danger\" data-delete=\"{eid}\">\
         Delete</button></form>"
    )
}

/// The page of a task whose record does not parse: the reason, and the
/// way out. Answered as `500 corrupt_record`, as the API does.
pub(super) fn corrupt_page(base: &str, id: &TaskId, reason: &str, read_only: bool) -> Response {
    let e = ApiError::from(executor_core::Error::Corrupt { id: id.clone(), reason: reason.to_owned() });
    let eid = esc(id.as_str());
    let action = format!("{}/tasks/{}", esc(base), segment(id.as_str()));
    let body = format!(
        "<h1>Task <code>{eid}</code> is unreadable</h1><div class=\"notice bad\">{code}: {message}</div>\
         <p>The stored record does not parse, so it cannot run, be cancelled or be requeued. Inspect it in \
         the store, or delete it: {form}</p>",
        code = esc(&e.body.code),
        message = esc(&e.body.message),
        form = delete_form(&action, &eid),
    );
    (e.status, Html(page(&format!("Task {}", id.as_str()), base, &body, read_only))).into_response()
}
