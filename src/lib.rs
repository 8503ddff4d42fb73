//! puzzleforge: renews chess puzzle benchmarks for evaluating and
//! prompt-optimizing large language models.
//!
//! One module per pipeline stage; stages exchange [`record::Puzzle`]s.

pub mod bench_pgn;
pub mod error;
pub mod fileio;
pub mod ingest;
pub mod pgn;
pub mod progress;
pub mod record;
pub mod summary;
pub mod wincalc;
