//! Durations written in the attribute (`"500ms"`, `"2s"`, `"1m"`, `"1h"`,
//! `"1d"`), parsed at compile time into milliseconds.
//!
//! The grammar is the one `reliable_executor::retry::parse_duration` accepts at run
//! time; the macro cannot depend on `executor-core`, so it keeps its own copy,
//! and the tests below pin the two to the same examples.

/// What every duration error tells the user to write instead.
pub(crate) const DURATION_HELP: &str =
    "write a whole number and a unit, e.g. \"500ms\", \"2s\", \"1m\", \"1h\", \"1d\"";

/// Milliseconds in `text`, or why it is not a duration.
pub(crate) fn parse_millis(text: &str) -> Result<u64, String> {
    let bad = |why: &str| format!("`{text}` is not a duration: {why}; {DURATION_HELP}");
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).ok_or_else(|| bad("it has no unit"))?;
    let (number, unit) = trimmed.split_at(split);
    if number.is_empty() {
        return Err(bad("it does not start with a whole number"));
    }
    let n: u64 = number.parse().map_err(|_| bad("the number is too large"))?;
    let millis_per_unit = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => return Err(bad(&format!("`{other}` is not a unit (ms, s, m, h, d)"))),
    };
    n.checked_mul(millis_per_unit).ok_or_else(|| bad("it is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_units() {
        let cases = [
            ("500ms", 500),
            ("2s", 2_000),
            ("1m", 60_000),
            ("3min", 180_000),
            ("1h", 3_600_000),
            ("1d", 86_400_000),
            (" 10s ", 10_000),
            ("0s", 0),
        ];
        for (text, millis) in cases {
            assert_eq!(parse_millis(text), Ok(millis), "{text}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_duration_and_says_what_to_write() {
        for text in ["", "2", "s", "2 parsecs", "1.5s", "-1s", "2S", "1h30m", "99999999999999999999s"] {
            let err = parse_millis(text).err().unwrap_or_default();
            assert!(err.contains("is not a duration"), "{text}: {err}");
            assert!(err.contains("\"500ms\""), "{text}: {err}");
        }
        assert!(parse_millis("2 parsecs").err().unwrap_or_default().contains("`parsecs` is not a unit"));
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        let max_days = u64::MAX / 86_400_000;
        assert!(parse_millis(&format!("{max_days}d")).is_ok());
        assert!(parse_millis(&format!("{}d", max_days + 1)).is_err());
    }
}
