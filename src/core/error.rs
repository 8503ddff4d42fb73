//! Error classes and the exit codes they map to.
//!
//! Every command returns `anyhow::Result`. An error whose chain contains a
//! [`BadInput`] is the user's to fix (bad input file, bad config, bad flag)
//! and exits with code 2; everything else is an internal failure, exit 1.

use std::fmt;

/// Marks an error as caused by the user's input or configuration (exit 2).
#[derive(Debug)]
pub(crate) struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Builds a bad-input error with the given message.
pub(crate) fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// Exit code for bad input or configuration.
pub(crate) const EXIT_BAD_INPUT: i32 = 2;
/// Exit code for an internal failure.
pub(crate) const EXIT_INTERNAL: i32 = 1;
/// Exit code of a command that wrote its output but fell short of what it
/// was asked under `--strict` (`run --strict` with unfilled cells): 2, as
/// `release --strict` exits for the same shortfall (before writing) and as
/// any result the user must act on (a larger budget, a smaller target),
/// never 1, which says the program failed.
pub const EXIT_SHORTFALL: i32 = EXIT_BAD_INPUT;

/// The exit code an error maps to.
pub fn exit_code(error: &anyhow::Error) -> i32 {
    if error.chain().any(|cause| cause.is::<BadInput>()) {
        EXIT_BAD_INPUT
    } else {
        EXIT_INTERNAL
    }
}

/// Shorthand: `Err(bad_input(format!(...)))`.
#[macro_export]
macro_rules! bail_input {
    ($($arg:tt)*) => {
        return Err($crate::core::error::bad_input(format!($($arg)*)))
    };
}
