//! Small HTML helpers: escaping, URL segments, times, the page frame.
//! Every piece of user or store data goes through [`esc`] or [`segment`].

use std::fmt::Write as _;

use axum::http::Uri;
use executor_core::Timestamp;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Characters escaped in a path segment or query value: all but unreserved.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Text escaped for HTML element content and quoted attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` percent-encoded for one path segment or query value (then safe
/// inside an HTML attribute as well).
pub(crate) fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// The prefix the admin router is mounted under (`/admin`, or empty at
/// the root), from the full request path and the path the router saw.
pub(crate) fn base(original: &Uri, seen: &Uri) -> String {
    let full = original.path();
    let base = full.strip_suffix(seen.path()).unwrap_or(full);
    base.trim_end_matches('/').to_owned()
}

/// An epoch-ms time as `2026-11-30 12:34:56 UTC`.
pub(crate) fn time(t: Option<Timestamp>) -> String {
    let Some(t) = t else { return "—".to_owned() };
    let secs = t.as_millis() / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A span of milliseconds for people: `420 ms`, `12.3 s`, `5 min 02 s`,
/// `2 h 03 min`, `3 d 04 h`.
pub(crate) fn millis(ms: u64) -> String {
    let (s, m, h, d) = (ms / 1000, ms / 60_000, ms / 3_600_000, ms / 86_400_000);
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{}.{} s", s, ms % 1000 / 100),
        60_000..3_600_000 => format!("{m} min {:02} s", s % 60),
        3_600_000..86_400_000 => format!("{h} h {:02} min", m % 60),
        _ => format!("{d} d {:02} h", h % 24),
    }
}

// Howard Hinnant's days-to-civil algorithm, for days since 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// Reloads the page's `<main>` every `ms` milliseconds without reloading
/// the page: fetched, parsed, swapped in; skipped while the tab is hidden
/// or a field has the focus (someone is typing a limit), kept on errors.
pub(crate) fn refresh_script(ms: u32) -> String {
    format!(
        "<script>(function(){{var ms={ms};function again(){{setTimeout(tick,ms);}}function tick(){{\
         var f=document.activeElement;if(document.hidden||(f&&/^(INPUT|SELECT|TEXTAREA)$/.test(f.tagName)))\
         {{return again();}}fetch(location.href,{{headers:{{Accept:'text/html'}}}}).then(function(r){{\
         return r.ok?r.text():null;}}).then(function(t){{if(t){{var m=new DOMParser().parseFromString(t,\
         'text/html').querySelector('main');if(m){{document.querySelector('main').innerHTML=m.innerHTML;\
         document.body.dataset.refreshed=String(Date.now());}}}}}}).catch(function(){{}}).then(again);}}\
         again();}})();</script>"
    )
}

/// A whole page: title, navigation back to the overview, and `body`. A
/// read-only page ([`crate::Admin::read_only`]) shows no form (every
/// button of the dashboard is one) and says it is read-only.
pub(crate) fn page(title: &str, base: &str, body: &str, read_only: bool) -> String {
    let mut out = String::with_capacity(body.len() + 2048);
    let home = if base.is_empty() { "/" } else { base };
    let stripped;
    let (body, badge) = if read_only {
        stripped = without_forms(body);
        (stripped.as_str(), "<span class=\"badge\" id=\"read-only\">read-only</span>")
    } else {
        (body, "")
    };
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{CSS}</style></head><body>\
         <header><a class=\"brand\" href=\"{home}\">Reliable Executor</a>\
         <a href=\"{base}/openapi.json\">OpenAPI</a>{badge}</header><main>{body}</main></body></html>",
        title = esc(title),
        home = esc(home),
        base = esc(base),
    );
    out
}

/// `body` less every `<form method="post" ...>...</form>` (the dashboard's
/// forms that change something hold their buttons and never nest; text is
/// escaped, so such markup is always one of them). The find form, a
/// `GET`, stays.
fn without_forms(body: &str) -> String {
    const POST_FORM: &str = "<form method=\"post\"";
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find(POST_FORM) {
        out.push_str(&rest[..start]);
        match rest[start..].find("</form>") {
            Some(end) => rest = &rest[start + end + "</form>".len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

const CSS: &str = "\
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}\
header{background:#24292f;padding:10px 24px;display:flex;gap:20px;align-items:center}\
header a{color:#d0d7de;text-decoration:none}header a.brand{color:#fff;font-weight:600;font-size:16px}\
header .badge{margin-left:auto;color:#24292f;background:#d0d7de;border-radius:10px;padding:1px 8px;font-size:12px}\
main{padding:16px 24px;max-width:1200px}h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:24px 0 8px}\
.meta{color:#57606a;margin-bottom:12px}\
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#fff;border:1px solid #d0d7de;border-radius:6px;\
padding:8px 14px;min-width:92px}.card .n{font-size:22px;font-weight:600}.card .s{color:#57606a;font-size:12px}\
.card.dead .n{color:#cf222e}.card.ok .n{color:#1a7f37}\
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #d0d7de}\
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #eaeef2;vertical-align:top}\
th{background:#f6f8fa;font-weight:600;font-size:12px;color:#57606a}\
td.err{color:#cf222e;font-family:ui-monospace,monospace;font-size:12px;max-width:480px;word-break:break-word}\
td.id{font-family:ui-monospace,monospace;font-size:12px}\
.state{font-size:11px;font-weight:600;padding:1px 6px;border-radius:10px;background:#eaeef2}\
.state.FAILED,.state.TIMEOUT,.state.ERROR{background:#ffebe9;color:#cf222e}\
.state.COMPLETED{background:#dafbe1;color:#1a7f37}.state.RUNNING{background:#ddf4ff;color:#0969da}\
button{font:inherit;font-size:12px;padding:3px 10px;border:1px solid #d0d7de;border-radius:6px;background:#f6f8fa;\
cursor:pointer}button.primary{background:#1f883d;color:#fff;border-color:#1a7f37}\
button.danger{color:#cf222e}form{display:inline;margin:0}\
.notice{background:#ddf4ff;border:1px solid #54aeff;border-radius:6px;padding:8px 12px;margin:8px 0}\
.notice.bad{background:#ffebe9;border-color:#ff8182}\
pre{background:#fff;border:1px solid #d0d7de;padding:10px;overflow:auto}.empty{color:#57606a;padding:8px 0}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;background:#fff;border:1px solid #d0d7de;\
padding:12px}dt{color:#57606a}dd{margin:0}\
.tabs{display:flex;flex-wrap:wrap;gap:6px;margin:10px 0}.tabs a{padding:3px 10px;border:1px solid #d0d7de;\
border-radius:6px;background:#fff;text-decoration:none;color:#1f2328;font-size:12px}\
.tabs a.current{background:#24292f;color:#fff}.tabs .n{color:#57606a}.tabs a.current .n{color:#d0d7de}\
form.find{display:block;margin:0 0 10px}.find input{font:inherit;font-size:12px;padding:3px 8px;border:1px solid #d0d7de;border-radius:6px;width:260px}\
.pager{margin:12px 0}.card .s a{color:inherit}\
.chart svg{display:block;width:100%;max-width:900px;height:auto;background:#fff;border:1px solid #d0d7de;\
border-radius:6px}.chart .ok{fill:#2da44e}.chart .fail{fill:#cf222e}.chart .axis{stroke:#8c959f}\
.chart .label{font-size:10px;fill:#57606a}.chart details{margin:6px 0}.chart strong.bad{color:#cf222e}\
@media (max-width:720px){header{padding:8px 12px;gap:12px}main{padding:10px 12px}\
table{display:block;overflow-x:auto;white-space:nowrap}td.err{white-space:normal;min-width:200px}\
.find input{width:150px}.card{min-width:70px;padding:6px 10px}}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<script>alert('x')</script> & "q""#),
            "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(segment("a/b c?d"), "a%2Fb%20c%3Fd");
    }

    #[test]
    fn formats_utc_times() {
        assert_eq!(time(Some(Timestamp::from_millis(0))), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(Some(Timestamp::from_millis(1_798_761_599_000))), "2026-12-31 23:59:59 UTC");
        assert_eq!(time(None), "—");
    }

    #[test]
    fn formats_spans_of_milliseconds() {
        let cases = [
            (0, "0 ms"),
            (999, "999 ms"),
            (12_345, "12.3 s"),
            (302_000, "5 min 02 s"),
            (7_380_000, "2 h 03 min"),
            (273_600_000, "3 d 04 h"),
        ];
        for (ms, text) in cases {
            assert_eq!(millis(ms), text, "{ms}");
        }
    }

    #[test]
    fn finds_the_mount_prefix() -> Result<(), axum::http::uri::InvalidUri> {
        let b = |full: &str, seen: &str| -> Result<String, axum::http::uri::InvalidUri> {
            Ok(base(&full.parse()?, &seen.parse()?))
        };
        assert_eq!(b("/admin/tasks/x", "/tasks/x")?, "/admin");
        assert_eq!(b("/admin", "/")?, "/admin");
        assert_eq!(b("/", "/")?, "");
        Ok(())
    }
}
