//! `puzzleforge run` and `puzzleforge merge`: `pipeline.toml` parsed into
//! typed sections, the stage trait and each stage's adapter, fingerprints
//! and `stage.json` manifests, scratch folders, the release lock, and the
//! shards of one release merged into the bytes of a single run.
//!
//! May use: [`crate::stages`] and everything below. Nothing below uses it.

pub mod stage;
pub mod adapters;
pub mod config;
pub mod lock;
pub mod manifest;
pub mod merge;
pub mod run;
