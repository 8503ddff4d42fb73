//! `puzzleforge ingest`: bring outside sources into puzzle records.

pub mod games;

use crate::summary::Summary;

/// The sources `ingest` reads.
#[derive(clap::Subcommand, Debug)]
pub enum IngestCommand {
    /// Find puzzle candidates in a Lichess game dump (PGN, plain or .zst)
    /// from its embedded `[%eval]` analysis.
    Games(games::GamesArgs),
}

/// Runs one `ingest` subcommand.
pub fn run_ingest(command: &IngestCommand) -> anyhow::Result<Summary> {
    match command {
        IngestCommand::Games(args) => games::run_games(args),
    }
}
