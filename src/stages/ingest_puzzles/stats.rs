//! What one ingest run did ([`IngestStats`]) and its summary. Apart because
//! the commit thread fills it, the rejects count into it and the bench
//! reads it.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::core::summary::Summary;

/// What one ingest run did.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct IngestStats {
    pub input: PathBuf,
    pub output: PathBuf,
    pub rejects: PathBuf,
    pub rows_read: u64,
    /// Rows that passed validation (before filters and sampling).
    pub accepted: u64,
    pub rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    pub filtered: u64,
    pub filtered_by_filter: BTreeMap<String, u64>,
    pub written: u64,
    /// Accepted puzzles whose mate themes and final position disagree.
    pub mate_disagreements: u64,
    pub seconds: f64,
    pub rows_per_sec: f64,
}

impl IngestStats {
    pub fn summary(&self) -> Summary {
        let mut human = format!(
            "ingest puzzles: {} rows read, {} accepted, {} rejected, {} filtered out, {} written to {}\n\
             {:.2} s, {:.0} rows/s\n",
            self.rows_read,
            self.accepted,
            self.rejected,
            self.filtered,
            self.written,
            self.output.display(),
            self.seconds,
            self.rows_per_sec
        );
        for (reason, n) in &self.rejected_by_reason {
            human.push_str(&format!("  rejected {reason}: {n}\n"));
        }
        for (filter, n) in &self.filtered_by_filter {
            human.push_str(&format!("  filtered {filter}: {n}\n"));
        }
        if self.rejected > 0 {
            human.push_str(&format!("rejects: {}\n", self.rejects.display()));
        }
        if self.mate_disagreements > 0 {
            human.push_str(&format!(
                "{} puzzles' mate themes disagree with their final position (column MateCheck)\n",
                self.mate_disagreements
            ));
        }
        let json = serde_json::to_value(self).unwrap_or(Value::Null);
        Summary::new(human, json)
    }
}
