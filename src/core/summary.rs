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
}

impl Summary {
    pub fn new(human: impl Into<String>, json: Value) -> Self {
        Self {
            human: human.into(),
            json,
        }
    }
}
