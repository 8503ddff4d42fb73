//! `puzzleforge ingest puzzles`: validates the Lichess puzzle dump (or the
//! APO benchmark's files, or puzzleforge JSON Lines), derives our columns
//! and writes the accepted puzzles, filtered and optionally sampled.
//!
//! The dump has about 5.5 million rows, so the run streams: a reader thread
//! parses CSV into batches of [`Row`](crate::core::csv_reader::Row)s
//! (recycled, so a row costs no allocation there), the main thread
//! validates each batch in parallel with rayon, each worker formatting its
//! accepted rows straight into an output buffer, and then walks the batch
//! in input order: duplicate ids, reservoir sampling and writing are
//! sequential, so the output order is the input order whatever the thread
//! timing.
//!
//! **The files.** [`row`]: the row layout and the checks of one row.
//! [`filters`]: the filter and sample options and the filter a row fails.
//! [`stats`]: the run's counts and summary. [`reader`]: the reader thread
//! and its batches. [`encode`]: rows into output bytes. [`validate`]: the
//! parallel stage. [`rejects`]: the rejects file. [`sample`]: the
//! reservoir. [`commit`]: the sequential stage that writes the output.
//! [`run`]: the entry points and the threads' wiring.

mod row;
mod filters;
mod stats;
mod reader;
mod encode;
mod validate;
pub(crate) mod rejects;
mod sample;
mod commit;
mod run;

pub use filters::{IngestPuzzlesConfig, MateFilter};
pub use row::{CheckedRow, RowLayout, check_row};
pub use run::{PuzzlesArgs, PuzzlesOverrides, ingest_puzzles, run_puzzles};
pub use stats::IngestStats;

/// The version of what this stage computes, recorded in its `stage.json`:
/// bumped whenever its output for the same input changes, so that a rerun
/// redoes the stage's stored output rather than reuse one made by other
/// rules (`tests/algorithms.rs` holds its output's sha256 on a fixed input,
/// and fails when that changes without this).
pub const ALGORITHM: &str = "ingest_puzzles-1";
