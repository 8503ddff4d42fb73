//! One module per pipeline stage, listed here in the order `run` chains
//! them. Each owns its settings (its `pipeline.toml` section), its
//! standalone command and its output files; stages exchange puzzle files
//! ([`crate::chess::record`]), never each other's internals.
//!
//! May use: [`crate::engine`], [`crate::chess`], [`crate::core`], and a stage
//! listed *before* it here (export reads the release folder the release
//! stage wrote). Must not reach into [`crate::generate`], [`crate::pipeline`] or [`crate::tools`]:
//! a stage never knows how it was scheduled.
//!
//! The stages' names and their order ([`StageName`], in `name`) live here,
//! beside the list, so that generation and the pipeline above both read
//! one list; `name` is no stage.

mod name;
pub use name::StageName;

pub mod ingest_puzzles;
pub mod ingest_games;
pub mod selfplay;
pub mod mine;
pub mod rate;
pub mod verify;
pub mod release;
pub mod export;
pub mod eval;
