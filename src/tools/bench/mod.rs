//! `puzzleforge bench ...`: speed measured side by side with a peer in the
//! same run, reported as ratios. Benchmarks, not tests.

pub mod ingest;
pub mod mine;
pub mod pgn;
pub mod pool;
