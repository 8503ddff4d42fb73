//! Plumbing every other folder uses and that knows nothing about chess,
//! engines or stages: errors and exit codes, config bounds and their one
//! check, files (zstd, atomic writes,
//! hashes), progress bars, command summaries, the shared statistics (mean, median,
//! percentages, the isotonic fit) and the chart error, the slicing of work
//! into shards, the one seed derivation every random draw comes from, and
//! the build identity (`build`: the source the binary was built from).
//!
//! May use: external crates only.

pub(crate) mod csv_reader;
pub mod error;
pub mod fileio;
pub(crate) mod lock;
pub mod progress;
pub(crate) mod seed;
pub mod bounds;
pub mod build;
pub mod settings;
pub(crate) mod shard;
pub(crate) mod stats;
pub mod summary;
