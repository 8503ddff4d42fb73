//! `puzzleforge ingest ...`: the `puzzles` and `games` subcommands' flags,
//! laid into `stages::ingest_puzzles`' and `stages::ingest_games`'
//! arguments.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use crate::core::summary::Summary;
use crate::stages::ingest_games::TimeClass;
use crate::stages::ingest_puzzles::MateFilter;

/// The `ingest` subcommands.
// Parsed once per run, so the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum IngestCommand {
    /// Validate the Lichess puzzle dump (CSV or CSV.zst), derive our columns,
    /// filter and sample; OUT's extension picks CSV or JSON Lines.
    Puzzles(PuzzlesFlags),
    /// Find puzzle candidates in a Lichess game dump (PGN, plain or .zst)
    /// from its embedded `[%eval]` analysis.
    Games(GamesFlags),
}

/// Runs one `ingest` subcommand.
pub(super) fn run(command: &IngestCommand) -> Result<Summary> {
    match command {
        IngestCommand::Puzzles(flags) => crate::stages::ingest_puzzles::run_puzzles(&flags.args()),
        IngestCommand::Games(flags) => crate::stages::ingest_games::run_games(&flags.args()),
    }
}

/// `puzzleforge ingest puzzles`.
#[derive(clap::Args, Debug, Clone)]
pub struct PuzzlesFlags {
    /// The puzzle file: Lichess CSV (10 or 11 columns), the APO benchmark's
    /// 15-column CSV, or puzzleforge JSON Lines; plain or zstd.
    pub input: PathBuf,
    /// Output file; `.csv`, `.jsonl`, either with `.zst`.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Where rejected rows go (default: OUTPUT + `.rejects.csv`).
    #[arg(long)]
    pub rejects: Option<PathBuf>,
    /// Keep puzzles rated at least this.
    #[arg(long)]
    pub min_rating: Option<i32>,
    /// Keep puzzles rated at most this.
    #[arg(long)]
    pub max_rating: Option<i32>,
    /// Keep puzzles whose RatingDeviation is at most this.
    #[arg(long)]
    pub max_rating_deviation: Option<i32>,
    /// Keep puzzles whose Popularity is at least this (-100..100).
    #[arg(long)]
    pub min_popularity: Option<i32>,
    /// Keep puzzles played at least this many times on Lichess.
    #[arg(long)]
    pub min_nb_plays: Option<i32>,
    /// Keep puzzles with any of these themes (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub themes_any: Vec<String>,
    /// Keep puzzles with all of these themes (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub themes_all: Vec<String>,
    /// Drop puzzles with any of these themes (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub themes_none: Vec<String>,
    /// Keep these solver lengths only (comma-separated, e.g. 1,2,3).
    #[arg(long, value_delimiter = ',')]
    pub solver_lengths: Vec<usize>,
    /// Keep mating puzzles only, non-mating ones only, or both.
    #[arg(long, value_enum)]
    pub mate: Option<MateFilter>,
    /// Keep a uniform sample of at most N puzzles (input order kept).
    #[arg(long)]
    pub sample: Option<u64>,
    /// Seed of the sample.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl PuzzlesFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::ingest_puzzles::PuzzlesArgs {
        let Self {
            input,
            output,
            rejects,
            min_rating,
            max_rating,
            max_rating_deviation,
            min_popularity,
            min_nb_plays,
            themes_any,
            themes_all,
            themes_none,
            solver_lengths,
            mate,
            sample,
            seed,
        } = self.clone();
        crate::stages::ingest_puzzles::PuzzlesArgs {
            input,
            output,
            rejects,
            overrides: crate::stages::ingest_puzzles::PuzzlesOverrides {
                min_rating,
                max_rating,
                max_rating_deviation,
                min_popularity,
                min_nb_plays,
                themes_any,
                themes_all,
                themes_none,
                solver_lengths,
                mate,
                sample,
                seed,
            },
        }
    }
}

/// `puzzleforge ingest games`.
#[derive(clap::Args, Debug, Clone)]
pub struct GamesFlags {
    /// Lichess game dump, `.pgn` or `.pgn.zst` (zstd detected by content).
    pub input: PathBuf,
    /// Output puzzle file: `.csv`, `.jsonl`, optionally followed by `.zst`.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Keep casual (unrated) games too.
    #[arg(long)]
    pub include_casual: bool,
    /// Time-control classes to keep (comma separated; default all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub time_control: Vec<TimeClass>,
    /// Minimum Elo of both players.
    #[arg(long)]
    pub min_elo: Option<u32>,
    /// Maximum Elo of both players.
    #[arg(long)]
    pub max_elo: Option<u32>,
    /// First game date kept (YYYY-MM-DD, from UTCDate).
    #[arg(long)]
    pub from: Option<String>,
    /// Last game date kept (YYYY-MM-DD, from UTCDate).
    #[arg(long)]
    pub to: Option<String>,
    /// Keep games played by BOT accounts.
    #[arg(long)]
    pub include_bots: bool,
    /// Write every position of games without [%eval] as a candidate.
    #[arg(long)]
    pub all_positions: bool,
    /// Minimum advantage of the side to move after the blunder, centipawns.
    #[arg(long)]
    pub min_advantage_cp: Option<i32>,
    /// Mates in fewer moves than this are Kind=mate.
    #[arg(long)]
    pub mate_soon: Option<u32>,
    /// Minimum rise of the opponent's winning chances (-1..1 scale).
    #[arg(long, value_parser = crate::core::settings::finite_number)]
    pub min_win_chance_gain: Option<f64>,
}

impl GamesFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::ingest_games::GamesArgs {
        let Self {
            input,
            output,
            include_casual,
            time_control,
            min_elo,
            max_elo,
            from,
            to,
            include_bots,
            all_positions,
            min_advantage_cp,
            mate_soon,
            min_win_chance_gain,
        } = self.clone();
        crate::stages::ingest_games::GamesArgs {
            input,
            output,
            overrides: crate::stages::ingest_games::GamesOverrides {
                include_casual,
                time_control,
                min_elo,
                max_elo,
                from,
                to,
                include_bots,
                all_positions,
                min_advantage_cp,
                mate_soon,
                min_win_chance_gain,
            },
        }
    }
}
