//! `puzzleforge bench ...`: speed measured side by side with a peer in the
//! same run, reported as ratios. Benchmarks, not tests.
//!
//! `bench generate` measures a pipeline setting (generation's profiles), so
//! it lives beside generation: [`crate::pipeline::generate_bench`]. It plays
//! its batch through `pipeline::generate`, and `tools` and `pipeline` are
//! one layer that may not use each other (tests/layout.rs).

pub mod ingest;
pub mod maia;
pub mod mine;
pub mod pgn;
pub mod pool;
