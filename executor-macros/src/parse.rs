//! The attribute's arguments: `#[reliable_task(name = "..", retry_limit = 3, ..)]`.
//!
//! Every key is checked here, at compile time, with the error on the exact
//! token and the fix in the message. Parsing goes on after an error so the
//! user sees every mistake in one build.

use proc_macro2::{Span, TokenStream};
use syn::{Expr, ExprLit, Lit, LitStr, Path, meta::ParseNestedMeta, parse::Parser};

use crate::{
    diagnostics::Errors,
    duration::{DURATION_HELP, parse_millis},
};

/// Longest task name, in bytes (`reliable_executor::id::MAX_ID_LEN`: names share the
/// id's limits so every store can key by them).
const MAX_NAME_LEN: usize = 191;

/// Most retries a task may ask for (`reliable_executor::options::MAX_RETRY_LIMIT`).
const MAX_RETRY_LIMIT: u32 = 10_000;

/// Every key the attribute accepts, as the unknown-key error lists them.
pub(crate) const VALID_KEYS: &str = "name, retry_limit, retry_interval, exponential(..), levels, max_duration, timeout, queue, priority, cron, timezone, crate";

/// Longest queue name, in bytes (`reliable_executor::queue::MAX_QUEUE_LEN`).
const MAX_QUEUE_LEN: usize = 64;

/// Highest priority (`reliable_executor::queue::MAX_PRIORITY`).
const MAX_PRIORITY: u8 = 9;

const KEYS: [&str; 12] = [
    "name",
    "retry_limit",
    "retry_interval",
    "exponential",
    "levels",
    "max_duration",
    "timeout",
    "queue",
    "priority",
    "cron",
    "timezone",
    "crate",
];

/// The parsed, checked attribute.
#[derive(Default)]
pub(crate) struct TaskAttr {
    /// The task name (required; `None` only after an error was recorded).
    pub(crate) name: Option<String>,
    /// Retries after the first attempt.
    pub(crate) retry_limit: Option<u32>,
    /// The retry policy, if one key set it.
    pub(crate) retry: Option<Retry>,
    /// `max_duration` in milliseconds.
    pub(crate) max_duration: Option<u64>,
    /// Per-attempt `timeout` in milliseconds.
    pub(crate) timeout: Option<u64>,
    /// `queue = ".."`: the queue its tasks wait in, checked.
    pub(crate) queue: Option<String>,
    /// `priority = N`: 0..=9, higher claimed first.
    pub(crate) priority: Option<u8>,
    /// `cron = ".."`: the schedule's expression, checked.
    pub(crate) cron: Option<String>,
    /// `timezone = ".."`: the schedule's zone, checked (default `UTC`).
    pub(crate) timezone: Option<String>,
    /// The `timezone` value's tokens, for the error when `cron` is missing.
    timezone_at: Option<Expr>,
    /// `crate = path`: where `reliable_executor` is reached.
    pub(crate) krate: Option<Path>,
    /// The key that set `retry`, for the conflict error.
    retry_key: Option<&'static str>,
    /// The `retry_limit` value's tokens, for the levels-versus-limit error.
    retry_limit_at: Option<Expr>,
    /// Keys seen so far, for the duplicate-key error.
    seen: Vec<String>,
}

/// A retry policy written in the attribute; durations in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Retry {
    /// `retry_interval = "2s"`.
    Fixed(u64),
    /// `exponential(base = "1s", factor = 2.0, cap = "1m", jitter = 0.2)`.
    Exponential { base: u64, factor: f64, cap: u64, jitter: f64 },
    /// `levels = ["10s", "1m", "10m", "1h"]`.
    Levels(Vec<u64>),
}

/// Defaults of `exponential(..)` keys left out.
const DEFAULT_FACTOR: f64 = 2.0;
const DEFAULT_CAP_MS: u64 = 3_600_000;

impl TaskAttr {
    /// Parses the attribute's tokens, recording every problem in `errors`.
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Self {
        let mut attr = Self::default();
        let parser = syn::meta::parser(|meta| attr.key(&meta, errors));
        if let Err(e) = parser.parse2(tokens) {
            // A syntax error (e.g. `name "x"` without `=`): nothing after it can be read.
            errors.push(e);
            // Do not also complain that `name` is missing when it may sit after the error.
            return attr;
        }
        match &attr.name {
            Some(_) => {}
            None if !attr.seen.iter().any(|k| k == "name") => errors.push(syn::Error::new(
                Span::call_site(),
                "missing `name`: write `#[reliable_task(name = \"process_order\")]`; the name \
                 identifies the task in the store, so keep it stable across deploys",
            )),
            None => {}
        }
        attr.levels_and_limit(errors);
        if let (None, Some(at)) = (&attr.cron, &attr.timezone_at)
            && !attr.seen.iter().any(|k| k == "cron")
        {
            errors.at(
                at,
                "`timezone` is the zone of a `cron` schedule: add `cron = \"0 0 2 * * *\"` or remove it",
            );
        }
        attr
    }

    /// With `levels` alone, the retry limit follows their count (the seed's
    /// 10 s, 1 min, 10 min: three retries, then the dead letter). A limit
    /// below the count would never reach the last levels: an error on it.
    fn levels_and_limit(&mut self, errors: &mut Errors) {
        let Some(Retry::Levels(levels)) = &self.retry else { return };
        let count = u32::try_from(levels.len()).unwrap_or(u32::MAX);
        match (self.retry_limit, &self.retry_limit_at) {
            (None, _) => self.retry_limit = Some(count),
            (Some(limit), Some(at)) if limit < count => errors.at(
                at,
                format!(
                    "retry_limit = {limit} never reaches the last {} of the {count} levels: set \
                     retry_limit = {count} (or more: the last level repeats), or leave retry_limit out \
                     and it follows the levels",
                    count - limit
                ),
            ),
            _ => {}
        }
    }

    fn key(&mut self, meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
        let path = &meta.path;
        let Some(key) = KEYS.iter().copied().find(|k| path.is_ident(k)) else {
            let written = path_text(path);
            let hint = suggestion(&written).map(|k| format!(" (did you mean `{k}`?)")).unwrap_or_default();
            errors.at(path, format!("unknown key `{written}`{hint}; valid keys: {VALID_KEYS}"));
            return skip_value(meta);
        };
        if self.seen.iter().any(|k| k == key) {
            errors.at(path, format!("`{key}` is given twice; keep one"));
            return skip_value(meta);
        }
        self.seen.push(key.to_owned());
        if matches!(key, "retry_interval" | "levels" | "exponential") && !self.claim_retry(key, path, errors)
        {
            return skip_value(meta);
        }
        if key == "exponential" {
            return self.exponential(meta, errors);
        }
        if !meta.input.peek(syn::Token![=]) {
            // Nothing after this can be read reliably: stop here.
            return Err(syn::Error::new_spanned(path, format!("`{key}` needs a value: {}", example(key))));
        }
        let value: Expr = meta.value()?.parse()?;
        match key {
            "name" => self.name = name(&value, errors),
            "retry_limit" => {
                self.retry_limit = retry_limit(&value, errors);
                self.retry_limit_at = Some(value.clone());
            }
            "retry_interval" => {
                self.retry = duration(&value, key, errors).map(Retry::Fixed);
            }
            "levels" => {
                self.retry = levels(&value, errors).map(Retry::Levels);
            }
            "max_duration" => self.max_duration = positive_duration(&value, key, errors),
            "timeout" => self.timeout = positive_duration(&value, key, errors),
            "queue" => self.queue = queue(&value, errors),
            "priority" => self.priority = priority(&value, errors),
            "cron" => self.cron = cron(&value, errors),
            "timezone" => {
                self.timezone = timezone(&value, errors);
                self.timezone_at = Some(value.clone());
            }
            _ => self.krate = crate_path(&value, errors),
        }
        Ok(())
    }

    fn exponential(&mut self, meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
        if !meta.input.peek(syn::token::Paren) {
            errors.at(&meta.path, format!("write the exponential backoff as {}", example("exponential")));
            return skip_value(meta);
        }
        let (mut base, mut factor, mut cap, mut jitter) = (None, None, None, None);
        meta.parse_nested_meta(|inner| {
            let key = ["base", "factor", "cap", "jitter"].into_iter().find(|k| inner.path.is_ident(k));
            let Some(key) = key else {
                errors.at(
                    &inner.path,
                    format!(
                        "unknown key `{}` in exponential(..); valid keys: base, factor, cap, jitter",
                        path_text(&inner.path)
                    ),
                );
                return skip_value(&inner);
            };
            let value: Expr = inner.value()?.parse()?;
            // Each value is kept with its tokens, for errors that compare two of them.
            match key {
                "base" => base = Some((duration(&value, "base", errors), value)),
                "cap" => cap = Some((duration(&value, "cap", errors), value)),
                "factor" => factor = Some((number(&value, "factor", "2.0", errors), value)),
                _ => jitter = Some((number(&value, "jitter", "0.2", errors), value)),
            }
            Ok(())
        })?;
        let Some((base_ms, base_expr)) = base else {
            errors.at(&meta.path, format!("exponential(..) needs a `base`: {}", example("exponential")));
            return Ok(());
        };
        let mut ok = base_ms.is_some();
        let factor_value = match &factor {
            Some((Some(f), expr)) if !f.is_finite() || *f < 1.0 => {
                errors.at(expr, format!("the factor must be at least 1.0 (e.g. factor = 2.0), not {f}"));
                None
            }
            Some((f, _)) => *f,
            None => Some(DEFAULT_FACTOR),
        };
        let jitter_value = match &jitter {
            Some((Some(j), expr)) if !(0.0..=1.0).contains(j) => {
                errors.at(expr, format!("jitter is a fraction between 0.0 and 1.0 (e.g. 0.2), not {j}"));
                None
            }
            Some((j, _)) => *j,
            None => Some(0.0),
        };
        let cap_value = match &cap {
            Some((c, _)) => *c,
            None => Some(DEFAULT_CAP_MS),
        };
        if let (Some(b), Some(c)) = (base_ms, cap_value)
            && b > c
        {
            match &cap {
                Some((_, expr)) => {
                    errors.at(expr, "`cap` is shorter than `base`; the cap is the longest delay")
                }
                None => errors.at(&base_expr, "`base` is longer than the default cap of 1h; set `cap` too"),
            }
            ok = false;
        }
        if let (true, Some(base), Some(factor), Some(cap), Some(jitter)) =
            (ok, base_ms, factor_value, cap_value, jitter_value)
        {
            self.retry = Some(Retry::Exponential { base, factor, cap, jitter });
        }
        Ok(())
    }

    /// Records `key` as the retry policy's key, or reports the conflict.
    fn claim_retry(&mut self, key: &'static str, at: &Path, errors: &mut Errors) -> bool {
        if let Some(first) = self.retry_key {
            errors.at(
                at,
                format!(
                    "`{key}` conflicts with `{first}`: a task has one retry policy; keep either \
                     `retry_interval` (fixed), `exponential(..)` or `levels`"
                ),
            );
            return false;
        }
        self.retry_key = Some(key);
        true
    }
}

/// How each key is written, for "needs a value" errors.
fn example(key: &str) -> &'static str {
    match key {
        "name" => "name = \"process_order\"",
        "retry_limit" => "retry_limit = 3",
        "retry_interval" => "retry_interval = \"2s\"",
        "exponential" => "exponential(base = \"1s\", factor = 2.0, cap = \"1m\", jitter = 0.2)",
        "levels" => "levels = [\"10s\", \"1m\", \"10m\", \"1h\"]",
        "max_duration" => "max_duration = \"60s\"",
        "timeout" => "timeout = \"10s\"",
        "queue" => "queue = \"emails\"",
        "priority" => "priority = 5",
        "cron" => "cron = \"0 0 2 * * *\"",
        "timezone" => "timezone = \"Europe/Berlin\"",
        _ => "crate = ::reliable_executor",
    }
}

/// Consumes a key's value, whatever it is, so parsing can go on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

fn path_text(path: &Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.join("::")
}

/// The valid key closest to a misspelt one, if any is close.
fn suggestion(written: &str) -> Option<&'static str> {
    let written = written.to_ascii_lowercase();
    KEYS.iter()
        .copied()
        .map(|k| (edit_distance(&written, k), k))
        .filter(|(d, k)| {
            *d <= 2 || (written.len() >= 4 && (k.starts_with(&written) || written.starts_with(k)))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

fn lit_str(value: &Expr) -> Option<&LitStr> {
    match value {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s),
        _ => None,
    }
}

fn name(value: &Expr, errors: &mut Errors) -> Option<String> {
    let Some(lit) = lit_str(value) else {
        errors.at(value, "`name` takes a string: name = \"process_order\"");
        return None;
    };
    let name = lit.value();
    if name.is_empty() {
        errors.at(lit, "`name` is empty: give the task a stable name, e.g. name = \"process_order\"");
        return None;
    }
    if let Some(c) = name.chars().find(|c| c.is_whitespace() || c.is_control()) {
        errors.at(
            lit,
            format!(
                "`name` contains {c:?}; task names are keys in the store, so they may not contain \
                 whitespace or control characters: use `_` or `.`, e.g. \"{}\"",
                name.split(|c: char| c.is_whitespace() || c.is_control())
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("_")
            ),
        );
        return None;
    }
    if name.len() > MAX_NAME_LEN {
        errors.at(lit, format!("`name` is {} bytes long; the limit is {MAX_NAME_LEN}", name.len()));
        return None;
    }
    Some(name)
}

/// A cron expression, parsed by the same crate and rules as at run time.
fn cron(value: &Expr, errors: &mut Errors) -> Option<String> {
    let Some(lit) = lit_str(value) else {
        errors.at(value, format!("`cron` takes the expression as a string: {}", example("cron")));
        return None;
    };
    let expression = lit.value();
    match expression.parse::<croner::Cron>() {
        Ok(_) => Some(expression),
        Err(e) => {
            errors.at(
                lit,
                format!(
                    "`{expression}` is not a cron expression ({e}); write 5 fields (minute hour \
                     day-of-month month day-of-week, e.g. \"*/5 * * * *\") or 6 with seconds first \
                     (e.g. \"0 0 2 * * *\")"
                ),
            );
            None
        }
    }
}

/// An IANA time zone, looked up in the same built-in database as at run time.
fn timezone(value: &Expr, errors: &mut Errors) -> Option<String> {
    let Some(lit) = lit_str(value) else {
        errors.at(value, format!("`timezone` takes an IANA zone name as a string: {}", example("timezone")));
        return None;
    };
    let zone = lit.value();
    match jiff::tz::TimeZone::get(&zone) {
        Ok(_) => Some(zone),
        Err(_) => {
            errors.at(
                lit,
                format!(
                    "`{zone}` is not a known time zone: use an IANA name such as \"Europe/Berlin\", \
                     \"America/New_York\" or \"UTC\""
                ),
            );
            None
        }
    }
}

fn queue(value: &Expr, errors: &mut Errors) -> Option<String> {
    let Some(lit) = lit_str(value) else {
        errors.at(value, "`queue` takes a string: queue = \"emails\"");
        return None;
    };
    let queue = lit.value();
    if queue.is_empty() || queue.len() > MAX_QUEUE_LEN {
        errors.at(lit, format!("`queue` must be 1 to {MAX_QUEUE_LEN} bytes long, e.g. queue = \"emails\""));
        return None;
    }
    if let Some(c) =
        queue.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
    {
        errors.at(lit, format!("`queue` contains {c:?}; use letters, digits, `-`, `_`, `.` or `:`"));
        return None;
    }
    Some(queue)
}

fn priority(value: &Expr, errors: &mut Errors) -> Option<u8> {
    let help =
        format!("priority is 0 (the default) to {MAX_PRIORITY}, higher claimed first, e.g. priority = 5");
    let Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) = value else {
        errors.at(value, format!("expected a whole number; {help}"));
        return None;
    };
    match int.base10_parse::<u8>() {
        Ok(n) if n <= MAX_PRIORITY => Some(n),
        _ => {
            errors.at(int, format!("priority must be at most {MAX_PRIORITY}; {help}"));
            None
        }
    }
}

fn retry_limit(value: &Expr, errors: &mut Errors) -> Option<u32> {
    let help = "retry_limit is the number of retries after the first attempt, e.g. retry_limit = 3";
    let Expr::Lit(ExprLit { lit: Lit::Int(int), .. }) = value else {
        errors.at(value, format!("expected a whole number; {help}"));
        return None;
    };
    match int.base10_parse::<u32>() {
        Ok(n) if n <= MAX_RETRY_LIMIT => Some(n),
        _ => {
            errors.at(int, format!("retry_limit must be at most {MAX_RETRY_LIMIT}; {help}"));
            None
        }
    }
}

fn duration(value: &Expr, key: &str, errors: &mut Errors) -> Option<u64> {
    let Some(lit) = lit_str(value) else {
        errors.at(value, format!("`{key}` takes a duration as a string; {DURATION_HELP}"));
        return None;
    };
    parse_millis(&lit.value()).map_err(|e| errors.at(lit, e)).ok()
}

fn positive_duration(value: &Expr, key: &str, errors: &mut Errors) -> Option<u64> {
    match duration(value, key, errors)? {
        0 => {
            errors.at(value, format!("`{key}` must be longer than zero; leave the key out for no limit"));
            None
        }
        ms => Some(ms),
    }
}

fn levels(value: &Expr, errors: &mut Errors) -> Option<Vec<u64>> {
    let Expr::Array(array) = value else {
        errors.at(value, format!("`levels` takes a list of durations: {}", example("levels")));
        return None;
    };
    if array.elems.is_empty() {
        errors.at(value, format!("`levels` needs at least one delay: {}", example("levels")));
        return None;
    }
    let parsed: Vec<Option<u64>> = array.elems.iter().map(|e| duration(e, "levels", errors)).collect();
    parsed.into_iter().collect()
}

fn number(value: &Expr, key: &str, example: &str, errors: &mut Errors) -> Option<f64> {
    let parsed = match value {
        Expr::Lit(ExprLit { lit: Lit::Float(f), .. }) => f.base10_parse::<f64>().ok(),
        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse::<f64>().ok(),
        _ => None,
    };
    if parsed.is_none() {
        errors.at(value, format!("`{key}` takes a number, e.g. {key} = {example}"));
    }
    parsed
}

fn crate_path(value: &Expr, errors: &mut Errors) -> Option<Path> {
    match value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Some(p.path.clone()),
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => s.parse::<Path>().map_err(|e| errors.push(e)).ok(),
        other => {
            errors.at(other, format!("`crate` takes a path to reliable_executor: {}", example("crate")));
            None
        }
    }
}

#[cfg(test)]
mod tests;
