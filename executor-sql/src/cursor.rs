//! The cursor of a list page: where the next page starts, in the
//! `(finished_at, id)` order every SQL dialect pages in.

use executor_core::{Error, Result};

/// `<prefix><finished_at or ->.<id in hex>`: hex, so any stored id (even
/// one that is not a valid `TaskId` any more) round-trips, and a cursor
/// from another store (another `prefix`) or another version is refused
/// rather than misread.
pub fn make(prefix: &str, finished: Option<i64>, id: &str) -> String {
    let f = finished.map_or_else(|| "-".to_owned(), |f| f.to_string());
    let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{f}.{hex}")
}

/// The `(finished_at, id)` of a cursor [`make`] made with `prefix`, for an
/// id of at most `max_id_chars` characters.
///
/// # Errors
/// [`Error::Invalid`] for anything else.
pub fn parse(prefix: &str, max_id_chars: usize, c: &str) -> Result<(Option<i64>, String)> {
    let bad = || Error::invalid("cursor", format!("`{c}` was not made by this store's list"));
    let (f, hex) = c.strip_prefix(prefix).and_then(|rest| rest.split_once('.')).ok_or_else(bad)?;
    let f = match f {
        "-" => None,
        f => Some(f.parse::<u64>().ok().and_then(|f| i64::try_from(f).ok()).ok_or_else(bad)?),
    };
    if hex.is_empty() || hex.len() % 2 != 0 || hex.len() > 2 * 4 * max_id_chars {
        return Err(bad());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)?;
    Ok((f, String::from_utf8(bytes).map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        for (f, id) in [(None, "a:b"), (Some(17), "x"), (Some(0), "pad "), (None, "é.\u{1d11e}")] {
            assert_eq!(
                parse("my1.", 255, &make("my1.", f, id)).ok(),
                Some((f, id.to_owned())),
                "{f:?} {id:?}"
            );
        }
        for foreign in [
            "garbage",
            "x:y",
            "0:x:y",
            "-:a",
            "my1.",
            "my1.-.",
            "my1.x.61",
            "my1.-1.61",
            "my1.1.6",
            "my1.1.zz",
            "my1.1.ff",
            "pg1.1.61",
        ] {
            assert!(parse("my1.", 255, foreign).is_err(), "{foreign} accepted");
        }
        // An id longer than the column holds (4 bytes a character).
        assert!(parse("my1.", 1, &make("my1.", None, "abcde")).is_err());
    }
}
