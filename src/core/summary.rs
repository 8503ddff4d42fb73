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
    /// The exit code of a shortfall, when not
    /// [`crate::core::error::EXIT_SHORTFALL`] (`reproduce` exits 1 when
    /// files differ, as `cmp` does).
    pub exit_code: Option<i32>,
}

impl Summary {
    pub fn new(human: impl Into<String>, json: Value) -> Self {
        Self {
            human: human.into(),
            json,
            shortfall: None,
            exit_code: None,
        }
    }
}

/// A command's result whose record is a typed struct: the pipeline edits
/// the record (names its files where they will live, not in the scratch
/// folder they were written to) before it becomes JSON, and the command
/// line prints it through [`Report::into_summary`]. The record's field
/// order is its JSON key order.
#[derive(Debug, Clone)]
pub struct Report<R> {
    /// Lines for a person, printed on stderr.
    pub human: String,
    /// The machine-readable summary.
    pub record: R,
}

impl<R: serde::Serialize> Report<R> {
    pub fn new(human: impl Into<String>, record: R) -> Self {
        Self {
            human: human.into(),
            record,
        }
    }

    /// The command's summary: the human lines and the record as JSON.
    pub fn into_summary(self) -> anyhow::Result<Summary> {
        let json = serde_json::to_value(&self.record)?;
        Ok(Summary::new(self.human, json))
    }
}

/// Serializes `(key, value)` pairs as one JSON object with the keys in the
/// pairs' order (for `#[serde(serialize_with)]`: a record's map whose
/// order is neither sorted nor a struct's).
pub fn serialize_pairs<K, V, S>(pairs: &[(K, V)], serializer: S) -> Result<S::Ok, S::Error>
where
    K: serde::Serialize,
    V: serde::Serialize,
    S: serde::Serializer,
{
    serializer.collect_map(pairs.iter().map(|(key, value)| (key, value)))
}
