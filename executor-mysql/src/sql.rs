//! The statements: each one a file under `sql/`, `sql/<module>/<what it
//! does>.sql`, loaded at compile time by `sql!`; and what binds them.
//!
//! A file starts with a comment saying what the statement does and what its
//! parameters are; `sql!` leaves that comment out of the text sent. A
//! statement whose shape depends on its input marks the part that varies,
//! and the driver writes it in at run time:
//!
//! - `/*SLICE:name*/?` or `/*SLICE:name*/(?, ..)`: the group after the
//!   marker, once per element, separated by commas (an `IN` list, the rows
//!   of a multi-row `VALUES`), see [`slice`];
//! - `/*UNION:name*/(..)`: the same, joined by `UNION ALL`, see [`union`];
//! - `/*LITERALS:name*/(..)`: a list of literals the driver writes in, see
//!   [`literals`];
//! - a line ending in `-- if name`: sent only when the driver says so, see
//!   [`only`].
//!
//! As they are, the files are statements the server runs: the group once,
//! the example list, every optional line; `explain/run.sh` runs them so.

pub(crate) use executor_sql::sql;

/// Where the marker `/*kind:name*/` and the group after it (a `?`, or one
/// parenthesised group, strings inside skipped) are in `text`: the marker's
/// start, the group, and the end of the group. `None` when the marker is
/// missing (a file and its code out of step, which the tests catch).
fn group<'t>(text: &'t str, marker: &str) -> Option<(usize, &'t str, usize)> {
    let at = text.find(marker)?;
    let from = at + marker.len();
    let bytes = text.as_bytes();
    if bytes.get(from) != Some(&b'(') {
        return (bytes.get(from) == Some(&b'?')).then(|| (at, &text[from..from + 1], from + 1));
    }
    let (mut depth, mut quoted) = (0usize, false);
    for (i, &c) in bytes.iter().enumerate().skip(from) {
        match c {
            b'\'' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return Some((at, &text[from..=i], i + 1));
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` with the group after `/*kind:name*/` written `n` times, joined by
/// `sep`.
fn repeat(text: &str, kind: &str, name: &str, n: usize, sep: &str) -> String {
    let marker = format!("/*{kind}:{name}*/");
    let Some((at, group, end)) = group(text, &marker) else { return text.to_owned() };
    let mut out = String::with_capacity(text.len() + n * (group.len() + sep.len()));
    out.push_str(&text[..at]);
    for i in 0..n {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(group);
    }
    out.push_str(&text[end..]);
    out
}

/// `text` with the group after `/*SLICE:name*/` written `n` times,
/// separated by commas.
pub(crate) fn slice(text: &str, name: &str, n: usize) -> String {
    repeat(text, "SLICE", name, n, ", ")
}

/// `text` with the group after `/*UNION:name*/` written `n` times, joined
/// by `UNION ALL`.
pub(crate) fn union(text: &str, name: &str, n: usize) -> String {
    repeat(text, "UNION", name, n, " UNION ALL ")
}

/// `text` with the list after `/*LITERALS:name*/` replaced by `(list)`.
/// `list` is the driver's own literals, never a caller's value.
pub(crate) fn literals(text: &str, name: &str, list: &str) -> String {
    let marker = format!("/*LITERALS:{name}*/");
    let Some((at, _, end)) = group(text, &marker) else { return text.to_owned() };
    format!("{}({list}){}", &text[..at], &text[end..])
}

/// `text` without the lines ending in `-- if name` whose name is not in
/// `on`, and without that comment on the others.
pub(crate) fn only(text: &str, on: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in text.lines() {
        match line.split_once(" -- if ") {
            Some((kept, name)) if on.contains(&name.trim()) => out.push(kept.trim_end()),
            Some(_) => {}
            None => out.push(line),
        }
    }
    out.join("\n")
}

/// A statement whose text was put together at run time from a file.
pub(crate) fn query<'q>(text: String) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    sqlx::query(sqlx::AssertSqlSafe(text))
}

/// `ids` padded to a power of two by repeating the last (harmless in `IN`),
/// so a statement with an `IN` list takes at most a dozen shapes and stays
/// in sqlx's prepared-statement cache instead of being prepared anew for
/// every batch size.
pub(crate) fn padded<'a>(ids: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut ids: Vec<&str> = ids.into_iter().collect();
    if let Some(&last) = ids.last() {
        ids.resize(ids.len().next_power_of_two(), last);
    }
    ids
}

/// Binds every value of `values`, in order.
pub(crate) fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
    values: &[&str],
) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    for v in values {
        q = q.bind((*v).to_owned());
    }
    q
}

/// Binds a task's key as the statements compare it: namespace, id and the
/// id's length in bytes. The `_bin` collations pad with spaces, so
/// `id = 'pad'` alone also matches a row whose id was edited to `'pad '`;
/// `TaskId` refuses whitespace, so only a hand-edited row can differ in
/// trailing spaces, and comparing the byte length too costs nothing once
/// the primary key found the row.
pub(crate) fn bind_task<'q>(
    q: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
    ns: &'q executor_core::Namespace,
    id: &'q executor_core::TaskId,
) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    q.bind(ns.as_str()).bind(id.as_str()).bind(u32::try_from(id.as_str().len()).unwrap_or(u32::MAX))
}

/// Run once on every connection the storage takes from the pool, in one
/// round trip (see the file).
pub(crate) const SESSION_SETUP: &str = sql!("conn/session_setup");

/// Columns the store holds for values the core types bound more loosely.
pub(crate) const ID_COLUMN_CHARS: usize = 191;
/// Width of the `name` column, in characters.
pub(crate) const NAME_COLUMN_CHARS: usize = 255;

/// Largest `attempts` (`INT UNSIGNED`) and `fence` (`BIGINT UNSIGNED`): a
/// row at either cannot be claimed or reaped without an out-of-range error,
/// so the statements that bump them skip it and move it to `ERROR`.
pub(crate) const MAX_ATTEMPTS_COLUMN: u32 = u32::MAX;
/// See [`MAX_ATTEMPTS_COLUMN`].
pub(crate) const MAX_FENCE_COLUMN: u64 = u64::MAX;

pub(crate) use executor_sql::stmt::{ms, ts};

/// A token for one claim or reap statement: the rows it changed are read
/// back by their ids and this token. Random per process (std's hasher
/// seed) plus a counter, so two statements never share one in practice, and
/// a collision would still need the same ids.
pub(crate) fn token() -> u64 {
    use std::{
        hash::{BuildHasher, RandomState},
        sync::{
            OnceLock,
            atomic::{AtomicU64, Ordering},
        },
    };
    static SEED: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| RandomState::new().hash_one(std::process::id()));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    // An odd multiplier visits every u64 before repeating.
    seed.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

pub(crate) use executor_sql::row::clip_error;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_lists_are_padded_to_a_power_of_two() {
        for (n, placeholders) in [(1, 1), (2, 2), (3, 4), (5, 8), (64, 64), (65, 128)] {
            let ids: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
            let padded = padded(ids.iter().map(String::as_str));
            assert_eq!(padded.len(), placeholders, "{n} ids");
            assert_eq!(padded.last(), ids.last().map(String::as_str).as_ref());
            let text = slice("SELECT 1 WHERE id IN (/*SLICE:ids*/?)", "ids", padded.len());
            assert_eq!(text.matches('?').count(), placeholders, "{n} ids");
        }
    }

    #[test]
    fn markers_expand() {
        assert_eq!(slice("a IN (/*SLICE:ids*/?) AND b", "ids", 3), "a IN (?, ?, ?) AND b");
        assert_eq!(slice("(id, f) IN (/*SLICE:p*/(?, ')'))", "p", 2), "(id, f) IN ((?, ')'), (?, ')'))");
        assert_eq!(
            union("FROM (/*UNION:s*/(SELECT x LIMIT ?)) n", "s", 2),
            "FROM ((SELECT x LIMIT ?) UNION ALL (SELECT x LIMIT ?)) n"
        );
        assert_eq!(literals("r IN /*LITERALS:r*/(0, 1, 2) AND", "r", "4, 7"), "r IN (4, 7) AND");
        assert_eq!(only("a\n  b -- if x\n  c -- if y\nd", &["y"]), "a\n  c\nd");
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
}
