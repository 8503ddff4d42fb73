//! `puzzleforge ingest ...`: bring outside sources (the Lichess puzzle DB,
//! Lichess game dumps) into puzzleforge's records.

pub mod games;
pub mod puzzles;

use anyhow::Result;

use crate::summary::Summary;

/// The `ingest` subcommands.
// Parsed once per run, so the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(clap::Subcommand, Debug)]
pub enum IngestCommand {
    /// Validate the Lichess puzzle dump (CSV or CSV.zst), derive our columns,
    /// filter and sample; OUT's extension picks CSV or JSON Lines.
    Puzzles(puzzles::PuzzlesArgs),
    /// Find puzzle candidates in a Lichess game dump (PGN, plain or .zst)
    /// from its embedded `[%eval]` analysis.
    Games(games::GamesArgs),
}

/// Arguments of `puzzleforge ingest`.
#[derive(clap::Args, Debug)]
pub struct IngestArgs {
    #[command(subcommand)]
    pub command: IngestCommand,
}

/// Runs an `ingest` subcommand.
pub fn run_ingest(args: &IngestArgs) -> Result<Summary> {
    match &args.command {
        IngestCommand::Puzzles(args) => puzzles::run_puzzles(args),
        IngestCommand::Games(args) => games::run_games(args),
    }
}
