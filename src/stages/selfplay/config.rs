//! The `[selfplay]` settings and the stage's arguments: the opening mode,
//! the Elo and ply limits, the human-game start (`[selfplay.human]`) and the
//! Maia players (`[selfplay.maia]`), each checked against its bounds. They
//! are apart from the play so a config can be read and checked without
//! playing a game.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use crate::chess::human_games::PoolLimits;
use crate::core::bounds::{Bound, Bounded, Many, Nested};
use crate::core::settings::switch_on;
use crate::engine::settings::EngineArgs;

/// How the first plies of a game are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Uniformly random plies, then random Elo per game.
    #[default]
    Chaos,
    /// e4/d4, then near-best engine moves; fixed Elo.
    Standard,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Chaos => "chaos",
            Mode::Standard => "standard",
        }
    }
}

/// `[selfplay]` in pipeline.toml; CLI flags override it.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SelfplayConfig {
    pub games: u64,
    pub seed: u64,
    pub mode: Mode,
    /// Random plies of the chaos opening.
    pub chaos_plies: u32,
    /// Inclusive Elo range White's Elo is drawn from in chaos mode.
    pub chaos_white_elo: [i32; 2],
    /// Inclusive Elo range Black's Elo is drawn from in chaos mode.
    pub chaos_black_elo: [i32; 2],
    /// Plies of the standard opening.
    pub opening_plies: u32,
    /// Lines searched for each standard opening ply after the first.
    pub opening_multipv: u32,
    /// A standard opening move is a candidate within this many cp of the best.
    pub opening_window_cp: i32,
    /// Depth of the standard opening searches (Epoch: 0.1 s).
    pub opening_depth: u32,
    /// Elo of White in standard mode.
    pub white_elo: i32,
    /// Elo of Black in standard mode.
    pub black_elo: i32,
    /// A game stops after this many plies, opening included.
    pub max_plies: u32,
    /// Use Stockfish's own UCI_LimitStrength (not reproducible: the engine
    /// seeds its choice from the clock) instead of our seeded copy.
    pub engine_limit: bool,
    /// PGN Event tag.
    pub event: String,
    /// PGN Site tag.
    pub site: String,
    /// PGN Date tag: fixed, never the wall clock, so runs are byte-identical.
    pub date: String,
    /// Human players after the opening instead of the weakened engine: a
    /// Maia-1 net per side, each move drawn from the net's probabilities
    /// (`[selfplay.maia]`; absent: Stockfish plays).
    pub maia: Option<MaiaPlayers>,
    /// Games start from a human game's position instead of the opening
    /// (`[selfplay.human]`; absent: from the standard start).
    pub human: Option<HumanStart>,
}

impl Bounded for SelfplayConfig {
    const BOUNDS: &'static [Bound] = &[
        Bound::within(
            "games",
            0.0,
            10000000.0,
            "games; 0 only when [generate] plays them",
        ),
        Bound::within("chaos_plies", 0.0, 200.0, "random plies of the opening"),
        Bound::pair(
            "chaos_white_elo",
            1350.0,
            2850.0,
            "Stockfish 15.1's UCI_Elo range",
        ),
        Bound::pair(
            "chaos_black_elo",
            1350.0,
            2850.0,
            "Stockfish 15.1's UCI_Elo range",
        ),
        Bound::within("opening_plies", 0.0, 200.0, "plies"),
        Bound::within("opening_multipv", 1.0, 500.0, "lines of the opening search"),
        Bound::within(
            "opening_window_cp",
            0.0,
            20000.0,
            "centipawns; a mate counts 10000 less its moves",
        ),
        Bound::within("opening_depth", 1.0, 60.0, "plies of search depth"),
        Bound::within(
            "white_elo",
            1350.0,
            2850.0,
            "Stockfish 15.1's UCI_Elo range",
        ),
        Bound::within(
            "black_elo",
            1350.0,
            2850.0,
            "Stockfish 15.1's UCI_Elo range",
        ),
        Bound::within("max_plies", 1.0, 2000.0, "plies of a game"),
    ];
    const NESTED: &'static [Nested] = &[
        Nested::of::<HumanStart>("human", Many::One),
        Nested::of::<MaiaPlayers>("maia", Many::One),
    ];
}

/// `[selfplay.human]`: each game starts from a prefix of a human game
/// (which game, and how many of its plies, drawn with the game's seed),
/// and the players carry on from there.
///
/// Why: weak self-play reaches positions where long forcing lines end in
/// mate; real games reach the middlegames where long non-mate
/// combinations live (docs/generation.md, "Human games"). The positions
/// of the source game are public; mining drops a puzzle whose position is
/// one of them, so what a grown game gives is new.
#[serde_with::skip_serializing_none]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HumanStart {
    /// The PGN of human games (`.pgn` or `.pgn.zst`, UTF-8 or Latin-1).
    /// Under `run` it is `[sources] human_games`, and a profile sets only
    /// the other keys.
    pub games: PathBuf,
    /// Inclusive range of the prefix's length in plies, drawn per game
    /// (capped at the source game's length less one ply).
    pub plies: [u32; 2],
    /// The pool: the first this many games of the file that start from the
    /// standard position and are long enough (`min_game_plies`).
    pub pool_games: u64,
    /// A game of the pool has at least this many plies (absent: one more
    /// than the shortest prefix).
    pub min_game_plies: Option<u32>,
    /// The new play stops after this many plies (absent: at the game's end
    /// or `max_plies`). At least 2: the positions of the source game are
    /// public and never searched, so a game needs a new position and a
    /// move played from it to give anything to mine.
    pub continue_plies: Option<u32>,
    /// The new play's first move is not the source game's next move (the
    /// weakened player picks among its other lines), so that a game grown
    /// from a puzzle leaves the puzzle's line at once instead of replaying
    /// its solution (docs/novelty.md). Off: the store keys of configs
    /// without it stay as they were.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub leave_line: bool,
}

impl Bounded for HumanStart {
    const BOUNDS: &'static [Bound] = &[
        Bound::pair(
            "plies",
            0.0,
            2000.0,
            "plies of the human game before the players carry on",
        ),
        Bound::within("pool_games", 1.0, 1000000000.0, "games of the pool"),
        Bound::within("min_game_plies", 1.0, 2000.0, "plies"),
        Bound::within(
            "continue_plies",
            2.0,
            2000.0,
            "plies played after the prefix; at least 2: a new position and a move from it",
        ),
    ];
}

impl Default for HumanStart {
    fn default() -> Self {
        Self {
            games: PathBuf::new(),
            plies: [20, 60],
            pool_games: 200_000,
            min_game_plies: None,
            continue_plies: None,
            leave_line: false,
        }
    }
}

impl HumanStart {
    fn validate(&self) -> Result<()> {
        if self.games.as_os_str().is_empty() {
            crate::bail_input!(
                "selfplay.human.games is not set: under `run`, set [sources] human_games \
                 (engines/human-games.sh fetches the committed config's file)"
            );
        }
        Ok(())
    }

    /// The pool's limits: by default a game needs a ply after the
    /// shortest prefix.
    pub(crate) fn limits(&self) -> PoolLimits {
        PoolLimits {
            min_plies: self.min_game_plies.unwrap_or(self.plies[0] + 1) as usize,
            max_games: self.pool_games,
        }
    }
}

/// `[selfplay.maia]`: which Maia-1 nets play the moves after the opening.
///
/// Why a human model: our copy of Stockfish's strength limit searches a
/// MultiPV 4 at depth >= 1 and keeps a mate it sees (a mate in one is
/// 32,000 internal units above any other move, far beyond the random push),
/// so a weakened Stockfish practically never misses a mate in one, and the
/// easy puzzles of the bottom rating bins (mates in one, a piece left
/// hanging) are exactly what it never leaves. A Maia net, drawn from at
/// temperature 1, plays a move with the probability a Lichess player of
/// its rating plays it: it misses what such players miss.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MaiaPlayers {
    /// Inclusive range White's net is drawn from, per game (hundreds,
    /// 1100..=1900: the nine Maia-1 nets).
    pub white: [u32; 2],
    /// Inclusive range Black's net is drawn from, per game.
    pub black: [u32; 2],
    /// The folder holding `maia-RATING.pb.gz`.
    pub models_dir: PathBuf,
}

impl Bounded for MaiaPlayers {
    const BOUNDS: &'static [Bound] = &[
        Bound::pair("white", 1100.0, 1900.0, "the Maia-1 nets, 1100 to 1900"),
        Bound::pair("black", 1100.0, 1900.0, "the Maia-1 nets, 1100 to 1900"),
    ];
}

impl Default for MaiaPlayers {
    fn default() -> Self {
        Self {
            white: [1100, 1900],
            black: [1100, 1900],
            models_dir: PathBuf::from(crate::maia::DEFAULT_MODELS_DIR),
        }
    }
}

impl MaiaPlayers {
    fn validate(&self) -> Result<()> {
        for (range, side) in [(self.white, "white"), (self.black, "black")] {
            for rating in range {
                if !crate::maia::MAIA_RATINGS.contains(&rating) {
                    crate::bail_input!(
                        "selfplay.maia.{side} rating {rating} is not a Maia-1 net (1100, 1200, \
                         ..., 1900)"
                    );
                }
            }
            if range[0] > range[1] {
                crate::bail_input!("selfplay.maia.{side} range {range:?} is empty");
            }
        }
        Ok(())
    }

    /// Every rating either side may draw, lowest first.
    pub(crate) fn ratings(&self) -> Vec<u32> {
        crate::maia::MAIA_RATINGS
            .iter()
            .copied()
            .filter(|r| {
                (self.white[0]..=self.white[1]).contains(r)
                    || (self.black[0]..=self.black[1]).contains(r)
            })
            .collect()
    }

    /// The sha256 of every net either side may draw, rating by rating: what
    /// a store key hashes instead of the folder's path.
    pub(crate) fn fingerprint(&self) -> Result<Vec<(u32, String)>> {
        let files = crate::maia::net_files(&self.models_dir, &self.ratings())
            .context("selfplay.maia.models_dir")?;
        Ok(files.into_iter().map(|f| (f.rating, f.sha256)).collect())
    }
}

impl Default for SelfplayConfig {
    fn default() -> Self {
        Self {
            games: 10,
            seed: 0,
            mode: Mode::Chaos,
            chaos_plies: 12,
            chaos_white_elo: [1500, 2500],
            chaos_black_elo: [1400, 2000],
            opening_plies: 8,
            opening_multipv: 4,
            opening_window_cp: 20,
            opening_depth: 10,
            white_elo: 2000,
            black_elo: 1600,
            max_plies: 150,
            engine_limit: false,
            event: "puzzleforge selfplay".to_string(),
            site: "puzzleforge".to_string(),
            date: "????.??.??".to_string(),
            maia: None,
            human: None,
        }
    }
}

impl SelfplayConfig {
    /// Rejects settings the engine cannot honour (exit 2).
    pub fn validate(&self) -> Result<()> {
        // Every number within its bound (Elo ranges within Stockfish's, and
        // not empty), then what the bounds cannot say alone.
        crate::core::bounds::check_section(self)
            .map_err(|e| crate::core::error::bad_input(format!("selfplay.{e}")))?;
        if let Some(human) = &self.human {
            human.validate()?;
            // Mining searches no position of the source game, so a game
            // must go on at least 2 plies past its prefix: a new position
            // and a move from it.
            if u64::from(human.plies[0]) + 2 > u64::from(self.max_plies) {
                crate::bail_input!(
                    "selfplay.human.plies starts at {} and selfplay.max_plies is {}: a game \
                     grown from a human game needs 2 plies after its prefix (a new position \
                     and a move from it) to give a position to mine; raise max_plies or \
                     lower plies",
                    human.plies[0],
                    self.max_plies
                );
            }
        }
        if let Some(maia) = &self.maia {
            maia.validate()?;
            if self.engine_limit {
                crate::bail_input!(
                    "selfplay.maia and engine_limit both choose the players: set one"
                );
            }
        }
        for (name, value) in [
            ("event", &self.event),
            ("site", &self.site),
            ("date", &self.date),
        ] {
            if value.contains(['"', '\\', '\n', '\r']) {
                crate::bail_input!(
                    "the PGN {name} {value:?} may not hold quotes, backslashes or newlines"
                );
            }
        }
        Ok(())
    }
}

/// `puzzleforge selfplay`'s flags (their help: `cli::selfplay`).
#[derive(Debug, Clone)]
pub struct SelfplayArgs {
    /// The flags laid over `[selfplay]` by [`crate::core::settings::flags_over`].
    pub overrides: SelfplayOverrides,
    pub output: PathBuf,
    /// Laid over `[engine]` by [`EngineArgs::resolve`].
    pub engine: EngineArgs,
}

/// `selfplay`'s flags (their help: `cli::selfplay`) over the `[selfplay]`
/// key of their serde name.
#[derive(Default, Debug, Clone, Serialize)]
pub struct SelfplayOverrides {
    pub games: Option<u64>,
    pub seed: Option<u64>,
    pub mode: Option<Mode>,
    pub white_elo: Option<i32>,
    pub black_elo: Option<i32>,
    pub max_plies: Option<u32>,
    pub opening_depth: Option<u32>,
    pub date: Option<String>,
    pub maia: Option<MaiaPlayers>,
    #[serde(serialize_with = "switch_on")]
    pub engine_limit: bool,
}

/// `--maia 1100-1500` or `--maia 1500`: both sides' range.
pub(crate) fn parse_maia_players(text: &str) -> Result<MaiaPlayers, String> {
    let rating = |part: &str| {
        part.trim()
            .parse::<u32>()
            .map_err(|_| format!("{part:?} is not a rating (1100, 1200, ..., 1900)"))
    };
    let range = match text.split_once('-') {
        Some((lo, hi)) => [rating(lo)?, rating(hi)?],
        None => [rating(text)?; 2],
    };
    let players = MaiaPlayers {
        white: range,
        black: range,
        ..MaiaPlayers::default()
    };
    players.validate().map_err(|e| format!("{e:#}"))?;
    Ok(players)
}
