//! The parallel stage: each batch validated in chunks with rayon, every
//! worker checking, filtering and encoding its rows into an output buffer,
//! and what it hands the commit thread per row ([`RowOutcome`]). Apart
//! because this is the only part that runs in parallel; nothing here
//! depends on the order of the rows.

use anyhow::Result;
use rayon::prelude::*;
use std::path::Path;
use std::sync::mpsc;

use super::encode::Encoder;
use super::filters::{IngestPuzzlesConfig, filter_out};
use super::reader::{Batch, BatchResult};
use super::row::{ID, RowLayout, THEMES, check_text_row, record_cells};
use crate::chess::line::PuzzleLine;
use crate::chess::record::{Format, RowError};
use crate::core::csv_reader::Row;
use crate::core::error::bad_input;

/// Rows per parallel task inside a batch.
const CHUNK_ROWS: usize = 256;

/// Compact key of a PuzzleId for the duplicate check: ids up to 15 bytes
/// (all Lichess ids are 5) pack into a u128 without allocating.
#[derive(PartialEq, Eq, Clone, Debug)]
pub(super) enum IdKey {
    Short(u128),
    Long(Box<[u8]>),
}

fn id_key(id: &[u8]) -> IdKey {
    if id.len() <= 15 {
        let mut bytes = [0u8; 16];
        bytes[..id.len()].copy_from_slice(id);
        bytes[15] = id.len() as u8;
        IdKey::Short(u128::from_le_bytes(bytes))
    } else {
        IdKey::Long(id.into())
    }
}

/// Outcome of one row after the parallel stage.
pub(super) enum RowOutcome {
    Rejected(RowError),
    Valid {
        id: IdKey,
        mate_disagrees: bool,
        /// The filter it failed, or the span of its encoded output.
        kept: std::result::Result<std::ops::Range<usize>, &'static str>,
    },
}

/// Spare output buffers shared by the validators and the commit thread.
pub(super) type BufferPool = std::sync::Mutex<Vec<Vec<u8>>>;

pub(super) struct ChunkOut {
    pub(super) bytes: Vec<u8>,
    pub(super) rows: Vec<RowOutcome>,
}

fn process_chunk(
    layout: &RowLayout,
    format: Format,
    config: &IngestPuzzlesConfig,
    records: &[Row],
    prerejected: &[Option<RowError>],
    buffers: &BufferPool,
) -> Result<ChunkOut> {
    // Output buffers come back from the commit thread: reusing them keeps
    // the allocator from returning and re-faulting pages every chunk.
    let buffer = buffers
        .lock()
        .ok()
        .and_then(|mut pool| pool.pop())
        .unwrap_or_else(|| Vec::with_capacity(CHUNK_ROWS * 512));
    let mut encoder = Encoder::new(layout, format, buffer);
    let mut rows = Vec::with_capacity(records.len());
    let mut cells: Vec<&str> = Vec::with_capacity(layout.header.len());
    let mut line = PuzzleLine::default();
    for (record, pre) in records.iter().zip(prerejected) {
        if let Some(error) = pre {
            rows.push(RowOutcome::Rejected(error.clone()));
            continue;
        }
        let checked = record_cells(layout, record, &mut cells)
            .and_then(|()| check_text_row(layout, &cells, &mut line));
        let outcome = match checked {
            Err(error) => RowOutcome::Rejected(error),
            Ok(row) => {
                let themes = layout.text(&cells, THEMES);
                let kept = match filter_out(config, &row, themes) {
                    Some(filter) => Err(filter),
                    None => Ok(encoder.encode(record.is_plain(), &cells, &row)?),
                };
                RowOutcome::Valid {
                    id: id_key(layout.text(&cells, ID).trim_ascii().as_bytes()),
                    mate_disagrees: matches!(row.derived.mate_check, "themes_only" | "board_only"),
                    kept,
                }
            }
        };
        rows.push(outcome);
    }
    Ok(ChunkOut {
        bytes: encoder.into_bytes(),
        rows,
    })
}

/// The validators' loop: checks each batch in parallel and hands it to the
/// commit thread; stops at a read error or when the commit thread stopped.
pub(super) fn validate_batches(
    batches: mpsc::Receiver<BatchResult>,
    layout: &RowLayout,
    format: Format,
    config: &IngestPuzzlesConfig,
    buffers: &BufferPool,
    to_commit: &mpsc::SyncSender<(Batch, Vec<ChunkOut>)>,
    input: &Path,
) -> Result<()> {
    let mut rows_validated = 0u64;
    for batch in batches {
        let batch = batch.map_err(|(line, error)| {
            bad_input(format!(
                "{}: the input is truncated or corrupt after {rows_validated} rows (line {line}): {error}",
                input.display(),
            ))
        })?;
        let chunks = batch.records[..batch.len]
            .par_chunks(CHUNK_ROWS)
            .zip(batch.prerejected.par_chunks(CHUNK_ROWS))
            .map(|(records, pre)| process_chunk(layout, format, config, records, pre, buffers))
            .collect::<Result<Vec<ChunkOut>>>()?;
        rows_validated += batch.len as u64;
        if to_commit.send((batch, chunks)).is_err() {
            // The commit thread stopped on an error; join reports it.
            break;
        }
    }
    Ok(())
}
