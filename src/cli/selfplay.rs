//! `puzzleforge selfplay`'s flags, laid into `stages::selfplay`'s arguments.

use std::path::PathBuf;

use super::groups::EngineFlags;
use crate::stages::selfplay::{MaiaPlayers, Mode, parse_maia_players};

/// `puzzleforge selfplay`.
#[derive(clap::Args, Debug, Clone)]
pub struct SelfplayFlags {
    /// Number of games.
    #[arg(long)]
    pub games: Option<u64>,
    /// Run seed; game i draws from (seed, i).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Opening mode.
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// White's Elo (standard mode).
    #[arg(long)]
    pub white_elo: Option<i32>,
    /// Black's Elo (standard mode).
    #[arg(long)]
    pub black_elo: Option<i32>,
    /// Stop a game after this many plies.
    #[arg(long)]
    pub max_plies: Option<u32>,
    /// Depth of the standard opening searches.
    #[arg(long)]
    pub opening_depth: Option<u32>,
    /// PGN Date tag.
    #[arg(long)]
    pub date: Option<String>,
    /// Maia-1 nets play after the opening instead of the weakened engine:
    /// `1100-1500` draws each side's net from that range per game, `1500`
    /// fixes it (nets from models/maia; `[selfplay.maia]` sets more).
    #[arg(long, value_name = "RATINGS", value_parser = parse_maia_players)]
    pub maia: Option<MaiaPlayers>,
    /// Weaken with Stockfish's own UCI_LimitStrength (NOT reproducible).
    #[arg(long)]
    pub engine_limit: bool,
    /// Output PGN file (`.zst` to compress).
    #[arg(short = 'o', long = "output", value_name = "PGN")]
    pub output: PathBuf,
    #[command(flatten)]
    pub engine: EngineFlags,
}

impl SelfplayFlags {
    /// The command's arguments, as its flags give them.
    pub fn args(&self) -> crate::stages::selfplay::SelfplayArgs {
        let Self {
            games,
            seed,
            mode,
            white_elo,
            black_elo,
            max_plies,
            opening_depth,
            date,
            maia,
            engine_limit,
            output,
            engine,
        } = self.clone();
        crate::stages::selfplay::SelfplayArgs {
            overrides: crate::stages::selfplay::SelfplayOverrides {
                games,
                seed,
                mode,
                white_elo,
                black_elo,
                max_plies,
                opening_depth,
                date,
                maia,
                engine_limit,
            },
            output,
            engine: engine.args(),
        }
    }
}
