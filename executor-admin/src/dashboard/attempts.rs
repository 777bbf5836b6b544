//! The "Attempts" table of a task's page: every attempt the store kept
//! (`TaskRecord::all_attempts`), oldest first.

use std::fmt::Write as _;

use executor_core::{TaskRecord, attempt_log::MAX_ATTEMPT_LOG};

use super::html::{esc, millis, time};

/// The section: a heading, the table (or a line saying no attempt started
/// yet), and what the store keeps.
pub(super) fn attempts_section(t: &TaskRecord) -> String {
    let attempts = t.all_attempts();
    let mut b = String::from("<h2>Attempts</h2>");
    if attempts.is_empty() {
        b.push_str("<p id=\"attempts\" class=\"meta\">No attempt started yet.</p>");
        return b;
    }
    b.push_str(
        "<table id=\"attempts\"><tr><th>#</th><th>Worker</th><th>Started</th><th>Ended</th>\
         <th>Duration</th><th>Outcome</th><th>Error</th></tr>",
    );
    for a in &attempts {
        let _ = write!(
            b,
            "<tr><td>{n}</td><td>{worker}</td><td>{started}</td><td>{ended}</td><td>{duration}</td>\
             <td class=\"outcome {outcome}\">{outcome}</td><td><code>{error}</code></td></tr>",
            n = a.attempt,
            worker = a.worker.as_ref().map_or_else(|| "—".to_owned(), |w| esc(w.as_str())),
            started = time(a.started_at),
            ended = time(a.ended_at),
            duration = a
                .duration()
                .map_or_else(|| "—".to_owned(), |d| millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
            outcome = a.outcome.as_str(),
            error = esc(a.error.as_deref().unwrap_or("")),
        );
    }
    b.push_str("</table>");
    let _ = write!(
        b,
        "<p class=\"meta\">The store keeps the {MAX_ATTEMPT_LOG} most recent earlier attempts (retried, \
         taken back from a lost worker, or dead-lettered before a requeue) with the task, and deletes \
         them with it; the last row is the current or last attempt. A finished attempt's worker is \
         known only while it is in that log.</p>"
    );
    b
}
