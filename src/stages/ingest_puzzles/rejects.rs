//! The rejects file: the rows that failed, with their line, id, reason and
//! detail, and where it goes by default. Apart because it is a second
//! output with its own format, written beside the puzzles.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

use super::stats::IngestStats;
use crate::chess::record::RowError;
use crate::core::fileio::AtomicFile;

/// Where rejected rows go: line, PuzzleId, reason, detail.
pub(crate) struct RejectsFile {
    csv: csv::Writer<AtomicFile>,
}

impl RejectsFile {
    pub(crate) fn create(path: &Path) -> Result<Self> {
        let mut csv = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(AtomicFile::create(path)?);
        csv.write_record(["line", "PuzzleId", "reason", "detail"])
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(Self { csv })
    }

    pub(crate) fn write(&mut self, line: u64, id: &[u8], error: &RowError) -> Result<()> {
        // Control characters escaped (`\0`), so the rejects file stays text
        // a user can read and grep.
        let id: String = String::from_utf8_lossy(id.trim_ascii())
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        self.csv
            .write_record([line.to_string().as_str(), &id, error.reason, &error.detail])
            .with_context(|| format!("writing {}", self.csv.get_ref().path().display()))?;
        Ok(())
    }

    pub(crate) fn commit(self) -> Result<()> {
        let path = self.csv.get_ref().path().to_path_buf();
        let file = self
            .csv
            .into_inner()
            .map_err(|e| anyhow::anyhow!("writing {}: {}", path.display(), e.error()))?;
        file.commit()
    }
}

/// The default rejects path: the output's name plus `.rejects.csv`.
pub(crate) fn default_rejects_path(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".rejects.csv");
    PathBuf::from(name)
}

pub(super) fn reject(
    stats: &mut IngestStats,
    rejects: &mut RejectsFile,
    line: u64,
    id: &[u8],
    error: &RowError,
) -> Result<()> {
    stats.rejected += 1;
    *stats
        .rejected_by_reason
        .entry(error.reason.to_string())
        .or_default() += 1;
    rejects.write(line, id, error)
}
