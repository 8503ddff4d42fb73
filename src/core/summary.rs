//! What a command reports when it finishes: a human summary for stderr and
//! one JSON object for stdout (`--json`).

use serde_json::Value;

/// The result of a command.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Lines for a person, printed on stderr.
    pub human: String,
    /// The machine-readable summary, printed on stdout with `--json`.
    pub json: Value,
    /// Why the command, having done its work and written its files, falls
    /// short of what it was asked (`run --strict` with unfilled cells):
    /// printed as an error after the summary, and the command exits
    /// [`crate::core::error::EXIT_SHORTFALL`].
    pub shortfall: Option<String>,
}

impl Summary {
    pub fn new(human: impl Into<String>, json: Value) -> Self {
        Self {
            human: human.into(),
            json,
            shortfall: None,
        }
    }
}
