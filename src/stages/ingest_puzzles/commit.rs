//! The writer: the sequential stage, which walks each validated batch in
//! input order (duplicate ids, counts, the sample) and writes the output
//! file, and the commit thread's loop around it. Apart because it is the
//! one part that must see the rows in order, so the output order is the
//! input order whatever the thread timing.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

use super::reader::Batch;
use super::rejects::{RejectsFile, reject};
use super::row::{ID, RowLayout};
use super::sample::Reservoir;
use super::stats::IngestStats;
use super::validate::{BufferPool, ChunkOut, IdKey, RowOutcome};
use crate::chess::record::{Format, LICHESS_COLUMNS, RowError};
use crate::core::fileio::AtomicFile;

/// The sequential stage: duplicate ids, counts, sampling and writing, in
/// input order.
pub(super) struct Committer<'a> {
    pub(super) layout: &'a RowLayout,
    pub(super) output: &'a Path,
    pub(super) stats: IngestStats,
    /// Ids of up to 15 bytes (every Lichess id) packed into a u128, so the
    /// check allocates nothing; longer ids go to `long_ids`.
    pub(super) short_ids: foldhash::HashSet<u128>,
    pub(super) long_ids: foldhash::HashSet<Box<[u8]>>,
    pub(super) reservoir: Option<Reservoir>,
    pub(super) kept_index: u64,
    pub(super) out: AtomicFile,
    pub(super) rejects: RejectsFile,
}

impl Committer<'_> {
    /// Writes the sample (when sampling), commits the output and rejects
    /// files, and returns the counts.
    pub(super) fn finish(self) -> Result<IngestStats> {
        let Committer {
            mut stats,
            reservoir,
            mut out,
            rejects,
            output,
            ..
        } = self;
        if let Some(reservoir) = reservoir {
            let dropped = reservoir.seen.saturating_sub(reservoir.capacity);
            if dropped > 0 {
                stats.filtered += dropped;
                stats
                    .filtered_by_filter
                    .insert("sample".to_string(), dropped);
            }
            for (_, bytes) in reservoir.into_sorted() {
                out.write_all(&bytes)
                    .with_context(|| format!("writing {}", output.display()))?;
                stats.written += 1;
            }
        }
        out.commit()?;
        rejects.commit()?;
        Ok(stats)
    }

    fn first_time(&mut self, id: &IdKey) -> bool {
        match id {
            IdKey::Short(key) => self.short_ids.insert(*key),
            IdKey::Long(key) => self.long_ids.insert(key.clone()),
        }
    }

    fn flush(&mut self, bytes: &[u8], run: Option<std::ops::Range<usize>>) -> Result<()> {
        if let Some(run) = run {
            self.out
                .write_all(&bytes[run])
                .with_context(|| format!("writing {}", self.output.display()))?;
        }
        Ok(())
    }

    fn take(&mut self, batch: &Batch, chunks: &[ChunkOut]) -> Result<()> {
        let mut row_index = 0;
        for chunk in chunks {
            let mut pending: Option<std::ops::Range<usize>> = None;
            for outcome in &chunk.rows {
                let line = batch.lines[row_index];
                let record = &batch.records[row_index];
                row_index += 1;
                self.stats.rows_read += 1;
                let id_cell = self.layout.lichess[ID]
                    .and_then(|i| record.get(i))
                    .unwrap_or(b"");
                let (id, mate_disagrees, kept) = match outcome {
                    RowOutcome::Rejected(error) => {
                        reject(&mut self.stats, &mut self.rejects, line, id_cell, error)?;
                        continue;
                    }
                    RowOutcome::Valid {
                        id,
                        mate_disagrees,
                        kept,
                    } => (id, mate_disagrees, kept),
                };
                if !self.first_time(id) {
                    let error =
                        RowError::new("duplicate_id", "the PuzzleId appeared on an earlier row");
                    reject(&mut self.stats, &mut self.rejects, line, id_cell, &error)?;
                    continue;
                }
                self.stats.accepted += 1;
                self.stats.mate_disagreements += u64::from(*mate_disagrees);
                match kept {
                    Err(filter) => {
                        self.stats.filtered += 1;
                        *self
                            .stats
                            .filtered_by_filter
                            .entry(filter.to_string())
                            .or_default() += 1;
                    }
                    Ok(span) => {
                        match self.reservoir.as_mut() {
                            Some(reservoir) => {
                                reservoir.offer(self.kept_index, &chunk.bytes[span.clone()])
                            }
                            None => {
                                // Kept rows of a chunk are mostly one run of
                                // bytes: write runs, not rows.
                                match &mut pending {
                                    Some(run) if run.end == span.start => run.end = span.end,
                                    _ => {
                                        self.flush(&chunk.bytes, pending.take())?;
                                        pending = Some(span.clone());
                                    }
                                }
                                self.stats.written += 1;
                            }
                        }
                        self.kept_index += 1;
                    }
                }
            }
            self.flush(&chunk.bytes, pending)?;
        }
        Ok(())
    }
}

/// Creates the output file and, for CSV, writes its header.
pub(super) fn create_output(
    output: &Path,
    format: Format,
    layout: &RowLayout,
) -> Result<AtomicFile> {
    let mut out = AtomicFile::create(output)?;
    if format == Format::Csv {
        let mut header = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        let names: Vec<&str> = LICHESS_COLUMNS
            .iter()
            .copied()
            .chain(layout.extra_names.iter().map(String::as_str))
            .collect();
        header.write_record(&names)?;
        let header = header
            .into_inner()
            .map_err(|e| anyhow::anyhow!("{}", e.error()))?;
        out.write_all(&header)
            .with_context(|| format!("writing {}", output.display()))?;
    }
    Ok(out)
}

/// The commit thread's loop: commits each validated batch in input order,
/// gives its buffers back for reuse and reports progress.
pub(super) fn commit_batches<'a>(
    mut committer: Committer<'a>,
    commits: mpsc::Receiver<(Batch, Vec<ChunkOut>)>,
    recycle: mpsc::Sender<Batch>,
    buffers: &BufferPool,
    progress: indicatif::ProgressBar,
    started: Instant,
) -> Result<Committer<'a>> {
    for (batch, chunks) in commits {
        committer.take(&batch, &chunks)?;
        if let Ok(mut pool) = buffers.lock() {
            for chunk in chunks {
                let mut bytes = chunk.bytes;
                bytes.clear();
                pool.push(bytes);
            }
        }
        let rows = committer.stats.rows_read;
        let seconds = started.elapsed().as_secs_f64();
        progress.set_message(format!(
            "{rows} rows, {:.0} rows/s",
            rows as f64 / seconds.max(1e-9)
        ));
        let _ = recycle.send(batch);
    }
    Ok(committer)
}
