//! `puzzleforge recheck`'s flags (the search flags shared with `verify`),
//! laid into the arguments `tools::recheck` takes.

use std::path::PathBuf;

use super::groups::{EngineFlags, VerifySearchFlags};
use crate::stages::verify::VerifyArgs;

/// `puzzleforge recheck`.
#[derive(clap::Args, Debug, Clone)]
pub struct RecheckFlags {
    /// A release folder (checked against its manifest first), or any
    /// puzzle file (CSV with a PuzzleId header, JSON Lines); a file inside
    /// a release folder reads that folder's settings.
    #[arg(value_name = "RELEASE")]
    pub release: PathBuf,
    #[command(flatten)]
    pub search: VerifySearchFlags,
    /// Re-check only this puzzle (repeatable).
    #[arg(long = "puzzle", value_name = "ID")]
    pub puzzles: Vec<String>,
    /// Re-check with this pipeline config's `[verify]` (its second engine
    /// included; the flags over it) instead of the settings the release
    /// records.
    #[arg(long, value_name = "PIPELINE_TOML")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl RecheckFlags {
    /// The re-check's arguments, as its flags give them (`verify`'s, with
    /// the re-check chosen and no report to write).
    pub fn args(&self) -> VerifyArgs {
        let Self {
            release,
            search,
            puzzles,
            config,
            engine,
        } = self.clone();
        VerifyArgs {
            input: release,
            overrides: search.overrides(),
            output: None,
            puzzles_out: None,
            puzzles,
            recheck: true,
            config,
            engine: engine.args(),
        }
    }
}
