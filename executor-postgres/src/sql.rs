//! The statements: each one a file under `sql/`, `sql/<module>/<what it
//! does>.sql`, loaded at compile time by `sql!`. A file starts with a
//! comment saying what the statement does and what its parameters are;
//! `sql!` leaves that comment out of the text sent. Lists are arrays
//! (`= ANY($2::TEXT[])`, `UNNEST(..)`), so every statement has one shape but
//! the list page's, whose optional lines the SQL core picks.

pub(crate) use executor_sql::sql;

/// Run once on every connection the storage takes from the pool (see the
/// file).
pub(crate) const SESSION_SETUP: &str = sql!("conn/session_setup");

/// Largest `attempts` (`INTEGER`): a row at it cannot be claimed without an
/// out-of-range error, so the claim moves it to `ERROR` instead (as it does
/// a fence at `BIGINT`'s maximum: `sql/claim/claim_queue.sql`).
pub(crate) const MAX_ATTEMPTS_COLUMN: u32 = i32::MAX as u32;

pub(crate) use executor_sql::stmt::{ms, ts};

/// A `u64` (a fence, a token) as the signed BIGINT the columns hold; values
/// above `i64::MAX` (never stored) saturate.
pub(crate) fn big(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A `u32` (attempts) as the signed INTEGER the columns hold.
pub(crate) fn int(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

pub(crate) use executor_sql::row::clip_error;

#[cfg(test)]
mod tests {

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
