//! Named queues on the dashboard: the overview's table of them (depth,
//! due tasks, latency, running tasks, limits, throttled claims, paused),
//! the Pause and Resume forms, and the form that sets or clears a queue's
//! limits.

use crate::AdminStorage;
use std::{fmt::Write as _, time::Duration};

use axum::{
    Form,
    extract::{
        OriginalUri, Path, State,
        rejection::{FormRejection, PathRejection},
    },
    http::Uri,
    response::Redirect,
};
use executor_core::{
    Error, QueueName,
    queue::{QueueLimits, RateLimit},
};
use serde::Deserialize;

use super::{
    HtmlError, ROWS, back,
    html::{self, esc, segment},
};
use crate::{
    Admin, ApiError,
    limits::{QueueLimitsView, RateLimitView},
    queues,
    views::QueueView,
};

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
        b.push_str(
            "<div class=\"empty\" id=\"queues\">No queue has waiting or running tasks, is paused or has \
             limits.</div>",
        );
        return Ok(());
    }
    b.push_str(
        "<table id=\"queues\"><tr><th>Queue</th><th>Waiting</th><th>Due</th><th>Latency</th>\
         <th>Running</th><th>Concurrency limit</th><th>Rate limit</th><th>Throttled</th>\
         <th>Status</th><th></th><th>Limits</th></tr>",
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
             <td>{waiting}</td><td>{due}</td><td title=\"{title}\">{latency}</td><td>{running}</td>\
             <td data-concurrency-limit=\"{ename}\">{concurrency}</td><td data-rate-limit=\"{ename}\">{rate}</td>\
             <td title=\"claims a limit cut short, since the queue's limits were first set\">{throttled}</td>\
             <td>{status}</td><td>{form}</td><td>{limits}</td></tr>",
            paused = q.paused,
            waiting = q.waiting,
            due = q.due,
            title = q.latency_ms.map_or_else(|| "no task is due".to_owned(), |ms| format!("{ms} ms")),
            latency = q.latency_ms.map_or_else(|| "—".to_owned(), html::millis),
            running = q.running,
            concurrency = q.limits.concurrency.map_or_else(|| "—".to_owned(), |n| n.to_string()),
            rate = q.limits.rate.as_ref().map_or_else(|| "—".to_owned(), rate_text),
            throttled = q.throttled,
            limits = limits_form(&action, &ename, &q.limits),
        );
    }
    b.push_str("</table>");
    Ok(())
}

/// `POST /queues/{name}/pause` (form): pause, then back to the overview.
#[utoipa::path(post, path = "/queues/{name}/pause", tag = "dashboard",
    params(("name" = String, Path, description = "Queue name")),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn pause<S: AdminStorage>(
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
    let result = queues::set_paused(admin, &name, paused).await;
    back(base, result.map(|_| format!("{done} queue {name}.")).map_err(|e| e.body.message))
}

/// A rate for people: `50/s`, `600/min`, `10 per 1.5 s`, with the burst
/// when it is not the rate itself.
fn rate_text(r: &RateLimitView) -> String {
    let per = match r.per_ms {
        1_000 => "/s".to_owned(),
        60_000 => "/min".to_owned(),
        3_600_000 => "/h".to_owned(),
        86_400_000 => "/day".to_owned(),
        ms => format!(" per {}", html::millis(ms)),
    };
    if r.burst == r.starts {
        format!("{}{per}", r.starts)
    } else {
        format!("{}{per} (burst {})", r.starts, r.burst)
    }
}

/// The limits form of one queue: a concurrency limit and a rate per
/// second, filled with the current ones; an empty field is no limit. A
/// rate the form cannot show as whole starts per second with a burst of
/// the same (one set through the API or `rex`) is kept while its field is
/// left empty (`keep_rate`), so changing the concurrency alone does not
/// drop it; Clear removes both.
fn limits_form(action: &str, ename: &str, limits: &QueueLimitsView) -> String {
    let concurrency = limits.concurrency.map_or_else(String::new, |n| n.to_string());
    let (rate, keep) = match &limits.rate {
        Some(r) if r.per_ms == 1_000 && r.burst == r.starts => (r.starts.to_string(), ""),
        Some(_) => (String::new(), "<input type=\"hidden\" name=\"keep_rate\" value=\"1\">"),
        None => (String::new(), ""),
    };
    let clear = if limits.concurrency.is_some() || limits.rate.is_some() {
        format!(" <button name=\"clear\" value=\"1\" data-clear-limits=\"{ename}\">Clear</button>")
    } else {
        String::new()
    };
    format!(
        "<form method=\"post\" action=\"{action}/limits\" class=\"limits\">{keep}\
         <input name=\"concurrency\" type=\"number\" min=\"1\" max=\"1000000\" size=\"5\" \
         placeholder=\"running\" title=\"most tasks running at once, fleet-wide; empty: no limit\" \
         value=\"{concurrency}\" data-concurrency=\"{ename}\"> \
         <input name=\"rate\" type=\"number\" min=\"1\" max=\"1000000\" size=\"5\" placeholder=\"per s\" \
         title=\"most starts per second, fleet-wide; empty: no limit\" value=\"{rate}\" data-rate=\"{ename}\"> \
         <button data-set-limits=\"{ename}\">Set</button>{clear}</form>"
    )
}

/// The limits form's fields, as typed: a field may be empty or not a
/// number, which the handler says in its notice.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LimitsForm {
    #[serde(default)]
    concurrency: String,
    #[serde(default)]
    rate: String,
    #[serde(default)]
    keep_rate: Option<String>,
    #[serde(default)]
    clear: Option<String>,
}

impl LimitsForm {
    /// The limits the form asks for; `current` gives the rate to keep.
    fn limits(&self, current: Option<&RateLimitView>) -> Result<QueueLimits, String> {
        if self.clear.is_some() {
            return Ok(QueueLimits::new());
        }
        let number = |field: &str, text: &str| -> Result<Option<u32>, String> {
            let text = text.trim();
            if text.is_empty() {
                return Ok(None);
            }
            text.parse().map(Some).map_err(|_| format!("{field}: `{text}` is not a whole number"))
        };
        let mut limits = QueueLimits::new();
        if let Some(n) = number("concurrency limit", &self.concurrency)? {
            limits = limits.concurrency(n);
        }
        match (number("rate limit", &self.rate)?, current.filter(|_| self.keep_rate.is_some())) {
            (Some(n), _) => limits = limits.rate(RateLimit::per_second(n).map_err(|e| e.to_string())?),
            (None, Some(r)) => {
                let rate = RateLimit::new(r.starts, Duration::from_millis(r.per_ms))
                    .and_then(|rate| rate.burst(r.burst))
                    .map_err(|e| e.to_string())?;
                limits = limits.rate(rate);
            }
            (None, None) => {}
        }
        limits.validate().map_err(|e| e.to_string())?;
        Ok(limits)
    }
}

/// `POST /queues/{name}/limits` (form): set or clear a queue's limits,
/// then back to the overview.
#[utoipa::path(post, path = "/queues/{name}/limits", tag = "dashboard",
    params(("name" = String, Path, description = "Queue name")),
    request_body(content_type = "application/x-www-form-urlencoded", description = "`concurrency` and \
        `rate` (starts per second), each empty for no limit; `keep_rate` keeps the current rate while \
        `rate` is empty; `clear` removes both"),
    responses((status = 303, description = "Back to the dashboard with a notice")))]
pub(crate) async fn limits<S: AdminStorage>(
    State(admin): State<Admin<S>>,
    OriginalUri(original): OriginalUri,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
    form: Result<Form<LimitsForm>, FormRejection>,
) -> Redirect {
    let base = html::base(&original, &uri);
    let result = async {
        let Path(name) = path.map_err(|e| ApiError::from(e).body.message)?;
        let queue = QueueName::new(name).map_err(|e| e.to_string())?;
        let Form(form) = form.map_err(|e| e.body_text())?;
        let current = if form.keep_rate.is_some() {
            let listed = queues::views(&admin).await.map_err(|e| ApiError::from(e).body.message)?;
            listed.into_iter().find(|v| v.queue == queue.as_str()).and_then(|v| v.limits.rate)
        } else {
            None
        };
        let limits = form.limits(current.as_ref())?;
        let text = notice(&queue, &limits);
        queues::set_limits(&admin, queue, limits).await.map_err(|e| e.body.message)?;
        Ok(text)
    }
    .await;
    back(&base, result)
}

/// What the notice says after a change.
fn notice(queue: &QueueName, limits: &QueueLimits) -> String {
    if limits.is_none() {
        return format!("Cleared the limits of queue {queue}.");
    }
    let view = QueueLimitsView::from(*limits);
    let mut parts = Vec::new();
    if let Some(n) = view.concurrency {
        parts.push(format!("at most {n} running"));
    }
    if let Some(r) = &view.rate {
        parts.push(rate_text(r));
    }
    format!("Limited queue {queue}: {}.", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(concurrency: &str, rate: &str) -> LimitsForm {
        LimitsForm { concurrency: concurrency.to_owned(), rate: rate.to_owned(), ..LimitsForm::default() }
    }

    #[test]
    fn the_form_reads_as_limits() -> Result<(), Box<dyn std::error::Error>> {
        let both = form("4", " 50 ").limits(None)?;
        assert_eq!(both, QueueLimits::new().concurrency(4).rate(RateLimit::per_second(50)?));
        assert!(form("", "").limits(None)?.is_none());
        for (c, r) in [("0", ""), ("x", ""), ("-1", ""), ("", "0"), ("", "2.5"), ("1000001", "")] {
            assert!(form(c, r).limits(None).is_err(), "{c:?} {r:?}");
        }
        let kept = RateLimitView { starts: 600, per_ms: 60_000, burst: 10 };
        let keep = LimitsForm { keep_rate: Some("1".to_owned()), ..form("2", "") };
        let limits = keep.limits(Some(&kept))?;
        assert_eq!(limits.rate, Some(RateLimit::new(600, Duration::from_secs(60))?.burst(10)?));
        let clear = LimitsForm { clear: Some("1".to_owned()), ..form("2", "5") };
        assert!(clear.limits(None)?.is_none());
        Ok(())
    }

    #[test]
    fn rates_read_well() {
        let r = |starts, per_ms, burst| rate_text(&RateLimitView { starts, per_ms, burst });
        assert_eq!(r(50, 1_000, 50), "50/s");
        assert_eq!(r(600, 60_000, 10), "600/min (burst 10)");
        assert_eq!(r(10, 1_500, 10), "10 per 1.5 s");
    }
}
