//! The statements: each one a file under `sql/`, `sql/<module>/<what it
//! does>.sql`, loaded at compile time by `sql!`. A file starts with a
//! comment saying what the statement does and what its parameters are;
//! `sql!` leaves that comment out of the text sent. Lists are arrays
//! (`= ANY($2::TEXT[])`, `UNNEST(..)`), so every statement has one shape but
//! the list page's, whose optional lines [`only`] picks.

pub(crate) use executor_sql::sql;

/// `text` without the lines ending in `-- if name` whose name is not in
/// `on`, and without that comment on the others; the placeholders left are
/// numbered `$1, $2, ..` in the order they appear (a file numbers them as
/// if every line were sent, and each appears once).
pub(crate) fn only(text: &str, on: &[&str]) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for line in text.lines() {
        match line.split_once(" -- if ") {
            Some((line, name)) if on.contains(&name.trim()) => kept.push(line.trim_end()),
            Some(_) => {}
            None => kept.push(line),
        }
    }
    let kept = kept.join("\n");
    let mut out = String::with_capacity(kept.len());
    let (mut n, mut quoted) = (0, false);
    let mut chars = kept.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '$' && !quoted && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// Run once on every connection the storage takes from the pool (see the
/// file).
pub(crate) const SESSION_SETUP: &str = sql!("conn/session_setup");

/// Largest `attempts` (`INTEGER`): a row at it cannot be claimed without an
/// out-of-range error, so the claim moves it to `ERROR` instead (as it does
/// a fence at `BIGINT`'s maximum: `sql/claim/claim_queue.sql`).
pub(crate) const MAX_ATTEMPTS_COLUMN: u32 = i32::MAX as u32;

/// Milliseconds of a duration as the signed BIGINT the columns hold, capped
/// at [`executor_core::time::MAX_DURATION`]: every duration from a user is
/// validated against that bound at the entry points; internal ones (a lease,
/// a leadership term, a retention) are capped here so that `now + d` can
/// never overflow a BIGINT whatever a caller passes.
pub(crate) fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.min(executor_core::time::MAX_DURATION).as_millis()).unwrap_or(i64::MAX)
}

/// A timestamp as the signed BIGINT the columns hold.
pub(crate) fn ts(t: executor_core::Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// A `u64` (a fence, a token) as the signed BIGINT the columns hold; values
/// above `i64::MAX` (never stored) saturate.
pub(crate) fn big(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A `u32` (attempts) as the signed INTEGER the columns hold.
pub(crate) fn int(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// Longest `last_error` stored, in bytes: free text from handlers, kept to
/// a size that reads back quickly in lists and pages. Cut on a character
/// boundary, with a marker.
const MAX_ERROR_BYTES: usize = 60_000;

/// `text` cut to [`MAX_ERROR_BYTES`], without NUL characters (PostgreSQL's
/// text cannot hold them: the statement would fail and leave the task
/// `RUNNING` until its lease expired).
pub(crate) fn clip_error(text: &str) -> String {
    let text =
        if text.contains('\0') { std::borrow::Cow::Owned(text.replace('\0', "\\0")) } else { text.into() };
    if text.len() <= MAX_ERROR_BYTES {
        return text.into_owned();
    }
    let mut end = MAX_ERROR_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (cut from {} bytes)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_lines_and_their_placeholders() {
        let text = "SELECT 1 WHERE a = $1\n  AND b = $2 -- if b\n  AND c = '$3' AND d = $4 -- if d\nLIMIT $5";
        assert_eq!(only(text, &[]), "SELECT 1 WHERE a = $1\nLIMIT $2");
        assert_eq!(only(text, &["d"]), "SELECT 1 WHERE a = $1\n  AND c = '$3' AND d = $2\nLIMIT $3");
    }

    /// Every statement file is run by the code: each one's name appears in
    /// a `sql!(..)` call under `src/`, so no dead statement file stays.
    #[test]
    fn every_statement_file_is_used() {
        let (files, unused) =
            executor_sql::unused_statement_files(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(files > 50, "{files} statement files found");
        assert!(unused.is_empty(), "statement files no code runs: {unused:?}");
    }

    #[test]
    fn long_errors_are_cut_on_a_char_boundary_and_nul_is_escaped() {
        assert_eq!(clip_error("short"), "short");
        assert_eq!(clip_error("a\0b"), "a\\0b");
        let long = "é".repeat(40_000);
        let cut = clip_error(&long);
        assert!(cut.len() < 60_100, "{}", cut.len());
        assert!(cut.ends_with("(cut from 80000 bytes)"), "{}", &cut[cut.len() - 40..]);
    }
}
