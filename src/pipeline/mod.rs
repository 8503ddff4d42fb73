//! `puzzleforge run` and `puzzleforge merge`: `pipeline.toml` parsed into
//! typed sections, the stage trait and each stage's adapter, fingerprints
//! and `stage.json` manifests, scratch folders, the release lock, and the
//! shards of one release merged into the bytes of a single run.
//!
//! May use: [`crate::stages`] and everything below. Nothing below uses it.

pub(crate) mod stage;
pub(crate) mod adapters;
pub mod aim;
pub(crate) mod config;
pub(crate) mod cost;
pub(crate) mod generate;
pub mod generate_bench;
pub(crate) mod lock;
pub(crate) mod manifest;
pub mod merge;
pub mod plan;
pub mod run;
