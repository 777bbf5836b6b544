//! The overview's Throughput section: attempts succeeded and
//! failed per minute as a server-side SVG bar chart, the numbers in a
//! table beside it, and plain links to switch between the last hour and
//! the last day and to one task name. No script, no external resource.

use std::fmt::Write as _;

use executor_core::{Error, Timestamp};

use super::{
    HtmlError,
    html::{esc, segment, time},
};
use crate::history::{DEFAULT_MINUTES, HistoryPoint, HistoryView, MAX_MINUTES};

/// The chart's drawing box (scaled to the page's width by the browser).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 180.0;
/// Room for the y labels on the left and the x labels below.
const LEFT: f64 = 44.0;
const BOTTOM: f64 = 20.0;
const TOP: f64 = 10.0;
/// Most bars drawn: a longer window groups minutes (a day: 15 per bar).
const MAX_BARS: u32 = 96;
/// Most task names offered as filters.
const MAX_NAME_LINKS: usize = 50;

/// One bar: the minutes it spans start at `minute`.
struct Bar {
    minute: u64,
    succeeded: u64,
    failed: u64,
}

/// Minutes per bar for a window of `minutes`: 1 up to two hours, else as
/// many as keep the chart at [`MAX_BARS`] bars.
fn step(minutes: u32) -> u32 {
    if minutes <= 2 * 60 { 1 } else { minutes.div_ceil(MAX_BARS) }
}

fn bars(series: &[HistoryPoint], step: usize) -> Vec<Bar> {
    series
        .chunks(step.max(1))
        .map(|c| Bar {
            minute: c.first().map_or(0, |p| p.minute),
            succeeded: c.iter().map(|p| p.succeeded).fold(0, u64::saturating_add),
            failed: c.iter().map(|p| p.failed).fold(0, u64::saturating_add),
        })
        .collect()
}

/// `HH:MM` of an epoch-ms minute, UTC.
fn clock(ms: u64) -> String {
    let full = time(Some(Timestamp::from_millis(ms)));
    full.get(11..16).unwrap_or(&full).to_owned()
}

/// A window's label: `60 minutes`, `24 hours`.
fn span(minutes: u32) -> String {
    if minutes.is_multiple_of(60) && minutes >= 120 {
        format!("{} hours", minutes / 60)
    } else {
        format!("{minutes} minutes")
    }
}

/// The link to the overview with window `minutes` and task `name`.
fn link(home: &str, minutes: u32, name: Option<&str>) -> String {
    let mut href = format!("{home}?minutes={minutes}");
    if let Some(n) = name {
        let _ = write!(href, "&name={}", segment(n));
    }
    esc(&href)
}

/// The chart itself: one `<g class="bar">` per bar with its numbers in
/// `data-` attributes and a `<title>` tooltip, a green rect for succeeded
/// and a red one stacked on it for failed.
fn svg(view: &HistoryView, bars: &[Bar], per_bar: u32) -> String {
    let max = bars.iter().map(|b| b.succeeded.saturating_add(b.failed)).max().unwrap_or(0).max(1);
    let plot_w = WIDTH - LEFT;
    let plot_h = HEIGHT - BOTTOM - TOP;
    let bw = plot_w / bars.len().max(1) as f64;
    let scale = plot_h / max as f64;
    let who = view.name.as_deref().map_or_else(|| "all tasks".to_owned(), |n| format!("task {n}"));
    let unit = if per_bar == 1 { "minute".to_owned() } else { format!("{per_bar} minutes") };
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg role=\"img\" aria-labelledby=\"throughput-title throughput-desc\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         xmlns=\"http://www.w3.org/2000/svg\" data-bars=\"{n}\" data-max=\"{max}\">\
         <title id=\"throughput-title\">Throughput of {who}, last {span}</title>\
         <desc id=\"throughput-desc\">{ok} attempts succeeded and {bad} failed; one bar per {unit}, \
         succeeded in green, failed in red on top. The numbers are in the table below the chart.</desc>",
        n = bars.len(),
        who = esc(&who),
        span = span(view.minutes),
        ok = view.totals.succeeded,
        bad = view.totals.failed,
    );
    let base_y = HEIGHT - BOTTOM;
    let _ = write!(
        s,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{base_y}\" x2=\"{WIDTH}\" y2=\"{base_y}\"/>\
         <text class=\"label\" x=\"{x}\" y=\"{top}\" text-anchor=\"end\">{max}</text>\
         <text class=\"label\" x=\"{x}\" y=\"{base_y}\" text-anchor=\"end\">0</text>",
        x = LEFT - 4.0,
        top = TOP + 8.0,
    );
    for (i, b) in bars.iter().enumerate() {
        let x = LEFT + bw * i as f64;
        let w = (bw - 1.0).max(0.5);
        let ok_h = b.succeeded as f64 * scale;
        let bad_h = b.failed as f64 * scale;
        let _ = write!(
            s,
            "<g class=\"bar\" data-minute=\"{m}\" data-succeeded=\"{ok}\" data-failed=\"{bad}\">\
             <title>{at} UTC: {ok} succeeded, {bad} failed</title>",
            m = b.minute,
            ok = b.succeeded,
            bad = b.failed,
            at = clock(b.minute),
        );
        if b.succeeded > 0 {
            let _ = write!(
                s,
                "<rect class=\"ok\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{ok_h:.2}\"/>",
                y = base_y - ok_h
            );
        }
        if b.failed > 0 {
            let _ = write!(
                s,
                "<rect class=\"fail\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{bad_h:.2}\"/>",
                y = base_y - ok_h - bad_h
            );
        }
        s.push_str("</g>");
    }
    let _ = write!(
        s,
        "<text class=\"label\" x=\"{LEFT}\" y=\"{y}\">{from} UTC</text>\
         <text class=\"label\" x=\"{x}\" y=\"{y}\" text-anchor=\"end\">{to} UTC</text></svg>",
        x = WIDTH - 2.0,
        y = HEIGHT - 5.0,
        from = clock(view.from),
        to = clock(view.to),
    );
    s
}

/// The Throughput section, from [`crate::history::window`]'s answer. A
/// store without history gets a line saying so, not an error page.
pub(super) fn throughput_section(
    b: &mut String,
    base: &str,
    view: Result<HistoryView, Error>,
) -> Result<(), HtmlError> {
    let view = match view {
        Ok(v) => v,
        Err(Error::Unsupported { .. }) => {
            b.push_str(
                "<h2>Throughput</h2><div class=\"empty\" id=\"throughput\">This store keeps no throughput \
                 history.</div>",
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let home = if base.is_empty() { "/" } else { base };
    let per_bar = step(view.minutes);
    let bars = bars(&view.series, usize::try_from(per_bar).unwrap_or(1));
    let name = view.name.as_deref();
    let _ = write!(
        b,
        "<h2>Throughput</h2><section class=\"chart\" id=\"throughput\" data-minutes=\"{m}\">\
         <div class=\"meta\" id=\"throughput-totals\">{who}, last {span}: <strong>{ok}</strong> succeeded, \
         <strong class=\"bad\">{bad}</strong> failed.</div><div class=\"tabs\" id=\"throughput-window\">",
        m = view.minutes,
        who = name.map_or_else(|| "All tasks".to_owned(), |n| format!("<code>{}</code>", esc(n))),
        span = span(view.minutes),
        ok = view.totals.succeeded,
        bad = view.totals.failed,
    );
    for (minutes, label) in [(DEFAULT_MINUTES, "60 min"), (MAX_MINUTES, "24 h")] {
        let current = if minutes == view.minutes { " class=\"current\" aria-current=\"page\"" } else { "" };
        let _ = write!(b, "<a href=\"{}\"{current}>{label}</a>", link(home, minutes, name));
    }
    b.push_str("</div>");
    if !view.names.is_empty() || name.is_some() {
        b.push_str("<div class=\"tabs\" id=\"throughput-names\">");
        let current = if name.is_none() { " class=\"current\" aria-current=\"page\"" } else { "" };
        let _ = write!(b, "<a href=\"{}\"{current}>All tasks</a>", link(home, view.minutes, None));
        for n in view.names.iter().take(MAX_NAME_LINKS) {
            let current =
                if name == Some(n.as_str()) { " class=\"current\" aria-current=\"page\"" } else { "" };
            let _ = write!(
                b,
                "<a href=\"{}\" data-name=\"{e}\"{current}>{e}</a>",
                link(home, view.minutes, Some(n)),
                e = esc(n)
            );
        }
        b.push_str("</div>");
    }
    b.push_str(&svg(&view, &bars, per_bar));
    let unit = if per_bar == 1 { "Minute".to_owned() } else { format!("{per_bar} minutes from") };
    let _ = write!(
        b,
        "<details><summary>The numbers</summary><table id=\"throughput-table\"><tr><th>{unit} (UTC)</th>\
         <th>Succeeded</th><th>Failed</th></tr>"
    );
    for bar in bars.iter().rev() {
        let _ = write!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            time(Some(Timestamp::from_millis(bar.minute))),
            bar.succeeded,
            bar.failed
        );
    }
    b.push_str("</table></details></section>");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_is_a_bar_a_minute_and_a_day_96_bars() {
        assert_eq!(step(60), 1);
        assert_eq!(step(120), 1);
        assert_eq!(step(1_440), 15);
        let series: Vec<HistoryPoint> = (0..1_440u64)
            .map(|i| HistoryPoint { minute: i * 60_000, succeeded: 1, failed: u64::from(i == 0) })
            .collect();
        let day = bars(&series, 15);
        assert_eq!(day.len(), 96);
        assert_eq!((day[0].minute, day[0].succeeded, day[0].failed), (0, 15, 1));
        assert_eq!(day[1].minute, 15 * 60_000);
    }
}
