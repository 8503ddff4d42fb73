//! Placeholder for `ingest games`, written in another branch; the real
//! module replaces this file.

use anyhow::Result;
use std::path::PathBuf;

use crate::error::bad_input;
use crate::summary::Summary;

/// Arguments of `ingest games` (placeholder).
#[derive(clap::Args, Debug)]
pub struct GamesArgs {
    /// The game dump.
    pub input: PathBuf,
}

/// Not yet available in this build.
pub fn run_games(args: &GamesArgs) -> Result<Summary> {
    Err(bad_input(format!(
        "{}: ingest games is not yet available in this build",
        args.input.display()
    )))
}
