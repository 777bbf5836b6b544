//! The one error of `rex`: a line for stderr and the exit code it ends with.

use std::{fmt, io};

use executor_core::Error;

/// What went wrong, as the operator reads it, and the exit code it maps to.
#[derive(Debug)]
pub(crate) struct CliError {
    /// The exit code: see [`CliError::NOT_FOUND`] and its siblings.
    pub(crate) code: u8,
    /// One line, without the `rex: ` prefix.
    pub(crate) message: String,
}

impl CliError {
    /// No task with that id, no schedule with that name.
    pub(crate) const NOT_FOUND: u8 = 1;
    /// Usage or bad input, including a transition the task's state refuses.
    pub(crate) const USAGE: u8 = 2;
    /// The store is unreachable or failing.
    pub(crate) const STORE: u8 = 3;
    /// Anything else: a corrupt record, a store without the ability asked for.
    pub(crate) const OTHER: u8 = 4;

    /// Bad input from the command line.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self { code: Self::USAGE, message: message.into() }
    }

    /// Something named on the command line does not exist.
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self { code: Self::NOT_FOUND, message: message.into() }
    }

    /// A store error, with `context` (what was being done) in front.
    pub(crate) fn store(context: &str, e: Error) -> Self {
        let code = match &e {
            Error::NotFound(_) => Self::NOT_FOUND,
            Error::Invalid { .. } | Error::IllegalTransition { .. } | Error::UnknownTask(_) => Self::USAGE,
            Error::Storage { .. } | Error::Timeout(_) => Self::STORE,
            _ => Self::OTHER,
        };
        Self { code, message: one_line(&format!("{context}: {e}")) }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<io::Error> for CliError {
    /// A closed pipe becomes code 0, which `main` ends quietly on.
    fn from(e: io::Error) -> Self {
        let code = if e.kind() == io::ErrorKind::BrokenPipe { 0 } else { Self::OTHER };
        Self { code, message: one_line(&format!("writing the output: {e}")) }
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        Self { code: Self::OTHER, message: one_line(&format!("encoding JSON: {e}")) }
    }
}

/// `text` on one line: drivers' messages sometimes span several, and the
/// contract is one line on stderr.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A `Result` whose error is [`CliError`].
pub(crate) type CliResult<T = ()> = Result<T, CliError>;
