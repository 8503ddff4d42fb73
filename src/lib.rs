//! puzzleforge: renews chess puzzle benchmarks for evaluating and
//! prompt-optimizing large language models.
//!
//! One module per pipeline stage; stages exchange [`record::Puzzle`]s.

pub mod error;
pub mod fileio;
pub mod progress;
pub mod record;
pub mod summary;
pub mod rate;
