//! `puzzleforge selfplay`: Epoch's game generator, made reproducible.
//!
//! Defaults follow Epoch's published generator (`puzzle_generator.py`):
//! a `chaos` opening of 12 uniformly random plies then Elo drawn per game
//! (White 1500..=2500, Black 1400..=2000), or a `standard` opening of
//! 8 plies (e4 in odd games, d4 in even ones, then a uniform choice among
//! the MultiPV 4 moves within 20 cp of the best) at White 2000 / Black 1600.
//! Both sides then play at their Elo through [`crate::engine::weaken`], our seeded
//! copy of Stockfish 15.1's strength limit, until checkmate, stalemate,
//! insufficient material, threefold repetition, the 50-move rule or
//! 150 plies (opening included, as in Epoch's loop).
//!
//! Differences from Epoch, all for reproducibility: searches are limited by
//! depth, never time (Epoch's opening used 0.1 s, we use `opening_depth`);
//! every random choice comes from a ChaCha8 generator seeded with the run
//! seed on stream = game index; a draw by repetition or the 50-move rule is
//! declared when it has happened (python-chess's `claim_draw` also ends a
//! game one ply early when the side to move *could* reach it).
//!
//! One game is one unit of [`EnginePool::map`], so the PGN is the same
//! whatever the number of workers.

use anyhow::{Context, Result};
use rand::Rng;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use serde::{Deserialize, Serialize};
use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, Position};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::chess::human_games::{HumanPool, PoolLimits, SourceGame};
use crate::chess::line::position_key;
use crate::core::bounds::{Bound, Bounded, Many, Nested};
use crate::core::fileio::AtomicFile;
use crate::core::seed::{self, Domain, Key};
use crate::core::settings::{flags_over, switch_on};
use crate::core::summary::{Report, Summary};
use crate::engine::pool::{EnginePool, Session};
use crate::engine::process::{EngineError, Limit, SearchRequest, thread_cpu_seconds};
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::engine::weaken::{self, weakened_move};
use crate::maia::{History, MaiaNets};

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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maia: Option<MaiaPlayers>,
    /// Games start from a human game's position instead of the opening
    /// (`[selfplay.human]`; absent: from the standard start).
    #[serde(skip_serializing_if = "Option::is_none")]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_game_plies: Option<u32>,
    /// The new play stops after this many plies (absent: at the game's end
    /// or `max_plies`). With 0 and a long `plies` range a game is its
    /// source game, and what mining keeps comes from its branches
    /// (`[mine] branch_moves`): positions one move off the human game.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continue_plies: Option<u32>,
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
            0.0,
            2000.0,
            "plies played after the prefix",
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

/// The loaded nets of [`MaiaPlayers`], one [`MaiaNets`] per rating.
pub(crate) struct MaiaBench {
    players: MaiaPlayers,
    nets: Vec<(u32, MaiaNets)>,
}

impl MaiaBench {
    pub(crate) fn load(players: &MaiaPlayers) -> Result<MaiaBench> {
        let nets = players
            .ratings()
            .into_iter()
            .map(|rating| {
                let nets = MaiaNets::load_ratings(&players.models_dir, &[rating])
                    .with_context(|| format!("selfplay.maia: the net of rating {rating}"))?;
                Ok((rating, nets))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MaiaBench {
            players: players.clone(),
            nets,
        })
    }

    fn net(&self, rating: u32) -> Option<&MaiaNets> {
        self.nets.iter().find(|(r, _)| *r == rating).map(|(_, n)| n)
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

/// `puzzleforge selfplay`. Each flag but the output and engine ones
/// overrides the `[selfplay]` key of its name
/// ([`crate::core::settings::flags_over`]).
#[derive(Debug, Clone, Serialize)]
pub struct SelfplayArgs {
    /// Number of games.
    pub games: Option<u64>,
    /// Run seed; game i draws from (seed, i).
    pub seed: Option<u64>,
    /// Opening mode.
    pub mode: Option<Mode>,
    /// White's Elo (standard mode).
    pub white_elo: Option<i32>,
    /// Black's Elo (standard mode).
    pub black_elo: Option<i32>,
    /// Stop a game after this many plies.
    pub max_plies: Option<u32>,
    /// Depth of the standard opening searches.
    pub opening_depth: Option<u32>,
    /// PGN Date tag.
    pub date: Option<String>,
    /// Maia-1 nets play after the opening instead of the weakened engine:
    /// `1100-1500` draws each side's net from that range per game, `1500`
    /// fixes it (nets from models/maia; `[selfplay.maia]` sets more).
    pub maia: Option<MaiaPlayers>,
    /// Weaken with Stockfish's own UCI_LimitStrength (NOT reproducible).
    #[serde(serialize_with = "switch_on")]
    pub engine_limit: bool,
    /// Output PGN file (`.zst` to compress).
    #[serde(skip)]
    pub output: PathBuf,
    #[serde(skip)]
    pub engine: EngineArgs,
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

pub fn run_selfplay(args: &SelfplayArgs) -> Result<Summary> {
    let config = flags_over(&SelfplayConfig::default(), args)?;
    config.validate()?;
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.progress = Some("games".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    run_selfplay_with(&config, &pool, &args.output)
}

/// Plays `config.games` games on `pool` and writes them to `output`.
pub fn run_selfplay_with(
    config: &SelfplayConfig,
    pool: &EnginePool,
    output: &Path,
) -> Result<Summary> {
    run_selfplay_range(config, pool, output, 1..=config.games)?.into_summary()
}

/// Plays the games numbered `indices` (a slice of `1..=config.games`, for
/// `run --shard`) and writes them to `output`. A game's bytes depend only
/// on the seed and its number, so the slices' files concatenated in order
/// are the file of the whole run.
pub(crate) fn run_selfplay_range(
    config: &SelfplayConfig,
    pool: &EnginePool,
    output: &Path,
    indices: std::ops::RangeInclusive<u64>,
) -> Result<Report<SelfplaySummary>> {
    config.validate()?;
    let indices: Vec<u64> = indices.collect();
    let games = play_indices(config, pool, &indices)?;
    let mut file = AtomicFile::create(output)?;
    let engine_name = pool.engine_id().to_string();
    for game in &games {
        file.write_all(game.to_pgn(config, &engine_name).as_bytes())
            .with_context(|| format!("writing {}", output.display()))?;
    }
    file.commit()?;
    let plies: usize = games.iter().map(|g| g.sans.len()).sum();
    let decisive = games
        .iter()
        .filter(|g| g.result == "1-0" || g.result == "0-1")
        .count();
    let human = format!(
        "selfplay: {} games ({} mode, {}, seed {}), {} plies, {} decisive -> {}{}",
        games.len(),
        config.mode.name(),
        players_of(config),
        config.seed,
        plies,
        decisive,
        output.display(),
        if config.engine_limit {
            " (engine limit: NOT reproducible)"
        } else {
            ""
        }
    );
    let record = SelfplaySummary {
        command: "selfplay",
        games: games.len(),
        plies,
        decisive,
        mode: config.mode.name(),
        players: players_of(config),
        seed: config.seed,
        reproducible: !config.engine_limit,
        output: output.display().to_string(),
    };
    Ok(Report::new(human, record))
}

/// The stage's JSON summary.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct SelfplaySummary {
    command: &'static str,
    games: usize,
    plies: usize,
    decisive: usize,
    mode: &'static str,
    players: String,
    seed: u64,
    /// False with an engine limit: the games then depend on the machine.
    reproducible: bool,
    /// The games file (where the pipeline commits it).
    pub(crate) output: String,
}

/// Who plays after the opening, in words.
fn players_of(config: &SelfplayConfig) -> String {
    match &config.maia {
        Some(maia) => format!(
            "Maia-1 players, White {}-{}, Black {}-{}",
            maia.white[0], maia.white[1], maia.black[0], maia.black[1]
        ),
        None => "weakened Stockfish players".to_string(),
    }
}

/// The self-play seed of release `release` of a config whose run seed is
/// `run_seed`, for a release other than the config's `pipeline.release`
/// (which plays with the run seed itself, so the default run's games are
/// the ones it always played). Without `[generate]` a release plays a
/// fixed `selfplay.games` games: a later release of the same config would
/// replay the first one's games, and every puzzle they hold is one an
/// earlier release has (and excludes). A seed from the release's name
/// gives each release games of its own, and depends on nothing but the
/// config and the name: a rerun, a shard or a merge of the release plays
/// the same games, whatever other releases the output folder holds or in
/// which order they were made.
pub(crate) fn release_seed(run_seed: u64, release: &str) -> u64 {
    seed::selfplay_seed(run_seed, Domain::SelfplayRelease, Key::Name(release))
}

/// Plays the games (indices 1..=games) across the pool, in index order.
pub(crate) fn play_games(config: &SelfplayConfig, pool: &EnginePool) -> Result<Vec<Game>> {
    let indices: Vec<u64> = (1..=config.games).collect();
    play_indices(config, pool, &indices)
}

/// Plays the games numbered `indices` across the pool, in that order; the
/// Maia nets, when humans play, are loaded once for all of them.
fn play_indices(config: &SelfplayConfig, pool: &EnginePool, indices: &[u64]) -> Result<Vec<Game>> {
    let maia = config.maia.as_ref().map(MaiaBench::load).transpose()?;
    // The pool is read once per process and file.
    let human = (config.human.as_ref())
        .map(|start| HumanPool::shared(&start.games, start.limits()))
        .transpose()?;
    pool.map(indices, |session, _, &index| {
        play_game(session, config, maia.as_ref(), human.as_deref(), index)
    })
}

/// One finished game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    /// 1-based game number (PGN Round).
    pub index: u64,
    pub white_elo: i32,
    pub black_elo: i32,
    pub sans: Vec<String>,
    pub ucis: Vec<UciMove>,
    /// `1-0`, `0-1`, `1/2-1/2` or `*` (ply cap reached).
    pub result: String,
    /// Why it ended: checkmate, stalemate, ...
    pub ending: String,
    /// The human game whose prefix it starts with (`[selfplay.human]`).
    pub source: Option<SourceGame>,
}

impl Game {
    /// The FEN the game starts from when it is not the standard start (a
    /// game grown from a puzzle).
    fn start_fen(&self) -> Option<&Fen> {
        self.source.as_ref()?.game.fen.as_deref()
    }

    /// The game as PGN text, ending with a blank line.
    pub(crate) fn to_pgn(&self, config: &SelfplayConfig, engine_name: &str) -> String {
        let weakening = if config.maia.is_some() {
            "maia-sample"
        } else if config.engine_limit {
            "engine-limit"
        } else {
            "puzzleforge-skill"
        };
        let player = |rating: i32| match config.maia {
            Some(_) => format!("Maia-1 {rating}"),
            None => format!("{engine_name} Elo {rating}"),
        };
        let mut text = String::new();
        let mut tag = |name: &str, value: &str| {
            text.push_str(&format!("[{name} \"{value}\"]\n"));
        };
        tag("Event", &config.event);
        tag("Site", &config.site);
        tag("Date", &config.date);
        tag("Round", &self.index.to_string());
        tag("White", &player(self.white_elo));
        tag("Black", &player(self.black_elo));
        tag("Result", &self.result);
        tag("WhiteElo", &self.white_elo.to_string());
        tag("BlackElo", &self.black_elo.to_string());
        tag("PlyCount", &self.sans.len().to_string());
        let start = self.start_fen();
        if let Some(fen) = start {
            tag("SetUp", "1");
            tag("FEN", &fen.to_string());
        }
        tag(
            "Termination",
            if self.result == "*" {
                "unterminated"
            } else {
                "normal"
            },
        );
        tag("Ending", &self.ending);
        tag(
            "Mode",
            if self.source.is_some() {
                "human"
            } else {
                config.mode.name()
            },
        );
        tag("Seed", &config.seed.to_string());
        tag("Weakening", weakening);
        tag(
            "Reproducible",
            if config.engine_limit { "false" } else { "true" },
        );
        if let Some(source) = &self.source {
            for (name, value) in source_tags(source) {
                tag(&name, &escape_tag_value(&value));
            }
        }
        text.push('\n');
        // Move numbers count from the start's: a FEN with Black to move
        // opens with "N...".
        let (first_move, black_first) = match start {
            Some(fen) => {
                let setup = fen.as_setup();
                (setup.fullmoves.get(), setup.turn == Color::Black)
            }
            None => (1, false),
        };
        let mut tokens = Vec::new();
        for (i, san) in self.sans.iter().enumerate() {
            let ply = i + usize::from(black_first);
            if i == 0 && black_first {
                tokens.push(format!("{first_move}..."));
            } else if ply % 2 == 0 {
                tokens.push(format!("{}.", first_move as usize + ply / 2));
            }
            tokens.push(san.clone());
        }
        tokens.push(self.result.clone());
        let mut line = String::new();
        for token in tokens {
            if !line.is_empty() && line.len() + 1 + token.len() > 79 {
                text.push_str(&line);
                text.push('\n');
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&token);
        }
        text.push_str(&line);
        text.push_str("\n\n");
        text
    }
}

/// A game in progress: position, moves so far and repetition history.
struct Board {
    /// Where the game starts: the standard position, or a puzzle's FEN
    /// (`[selfplay.human]` from a puzzle file).
    start_fen: Fen,
    position: Chess,
    ucis: Vec<UciMove>,
    sans: Vec<String>,
    hashes: Vec<u64>,
}

impl Board {
    fn new() -> Self {
        Self::starting_at(Chess::default())
    }

    fn starting_at(position: Chess) -> Self {
        let hash = position_key(&position);
        Self {
            start_fen: Fen::from_position(&position, EnPassantMode::Legal),
            position,
            ucis: Vec::new(),
            sans: Vec::new(),
            hashes: vec![hash],
        }
    }

    fn play(&mut self, m: Move) {
        self.ucis.push(m.to_uci(CastlingMode::Standard));
        let san = SanPlus::from_move_and_play_unchecked(&mut self.position, m);
        self.sans.push(san.to_string());
        self.hashes.push(position_key(&self.position));
    }

    /// The result and reason when the game is over.
    fn ending(&self) -> Option<(&'static str, &'static str)> {
        let pos = &self.position;
        if pos.is_checkmate() {
            return Some((
                if pos.turn() == Color::White {
                    "0-1"
                } else {
                    "1-0"
                },
                "checkmate",
            ));
        }
        if pos.is_stalemate() {
            return Some(("1/2-1/2", "stalemate"));
        }
        if pos.is_insufficient_material() {
            return Some(("1/2-1/2", "insufficient material"));
        }
        let current = self.hashes.last().copied().unwrap_or_default();
        if self.hashes.iter().filter(|&&h| h == current).count() >= 3 {
            return Some(("1/2-1/2", "threefold repetition"));
        }
        if pos.halfmoves() >= 100 {
            return Some(("1/2-1/2", "fifty-move rule"));
        }
        None
    }

    fn request(&self, limit: Limit, multipv: u32) -> SearchRequest {
        SearchRequest {
            fen: self.start_fen.clone(),
            moves: self.ucis.clone(),
            limit,
            multipv,
        }
    }

    /// Parses an engine move, which must be legal here.
    fn engine_move(&self, uci: &str) -> Result<Move, EngineError> {
        uci.parse::<UciMove>()
            .map_err(|_| EngineError::Garbage(format!("move {uci:?} is not UCI")))
            .and_then(|m| self.legal_move(m))
    }

    /// An engine move read as UCI, which must be legal here.
    fn legal_move(&self, uci: UciMove) -> Result<Move, EngineError> {
        uci.to_move(&self.position).map_err(|_| {
            EngineError::Garbage(format!(
                "move {:?} is not legal in {}",
                uci.to_string(),
                Fen::from_position(&self.position, EnPassantMode::Legal)
            ))
        })
    }
}

/// Plays game `index` (1-based) on one engine: after the opening the nets
/// of `maia` (loaded from `config.maia`) when given, else the weakened
/// engine.
fn play_game(
    session: &mut Session,
    config: &SelfplayConfig,
    maia: Option<&MaiaBench>,
    human: Option<&HumanPool>,
    index: u64,
) -> Result<Game, EngineError> {
    let mut rng = seed::rng(config.seed, Domain::SelfplayGame, Key::Index(index));
    let mut board = Board::new();
    let mut cap = config.max_plies as usize;
    let source = match (human, &config.human) {
        (Some(pool), Some(start)) => Some(play_human_prefix(&mut board, pool, start, &mut rng)?),
        _ => None,
    };
    if let (Some(source), Some(start)) = (&source, &config.human)
        && let Some(more) = start.continue_plies
    {
        cap = cap.min(source.ply + more as usize);
    }
    match config.mode {
        _ if source.is_some() => {}
        Mode::Chaos => {
            for _ in 0..config.chaos_plies {
                if board.ending().is_some() || board.sans.len() >= cap {
                    break;
                }
                let legal = board.position.legal_moves();
                let choice = legal[rng.random_range(0..legal.len())];
                board.play(choice);
            }
        }
        Mode::Standard => {
            for ply in 0..config.opening_plies {
                if board.ending().is_some() || board.sans.len() >= cap {
                    break;
                }
                let choice = if ply == 0 {
                    board.engine_move(if index % 2 == 1 { "e2e4" } else { "d2d4" })?
                } else {
                    let request =
                        board.request(Limit::Depth(config.opening_depth), config.opening_multipv);
                    let result = session.search(&request)?;
                    let best = result.lines.first().map(|line| line.score.to_cp());
                    let mut candidates = Vec::new();
                    for line in &result.lines {
                        if let (Some(best), Some(first)) = (best, line.pv.first())
                            && line.score.to_cp() >= best - config.opening_window_cp
                        {
                            candidates.push(board.legal_move(*first)?);
                        }
                    }
                    if candidates.is_empty() {
                        let legal = board.position.legal_moves();
                        legal[rng.random_range(0..legal.len())]
                    } else {
                        candidates[rng.random_range(0..candidates.len())]
                    }
                };
                board.play(choice);
            }
        }
    }
    if let Some(bench) = maia {
        let start = thread_cpu_seconds();
        let game = play_maia_game(board, bench, &mut rng, cap, index);
        session.charge_cpu_seconds(thread_cpu_seconds() - start);
        return game.map(|game| Game { source, ..game });
    }
    let (white_elo, black_elo) = match config.mode {
        Mode::Chaos => (
            rng.random_range(config.chaos_white_elo[0]..=config.chaos_white_elo[1]),
            rng.random_range(config.chaos_black_elo[0]..=config.chaos_black_elo[1]),
        ),
        Mode::Standard => (config.white_elo, config.black_elo),
    };
    let level_of =
        |elo: i32| weaken::skill_level(elo).map_err(|e| EngineError::Fatal(format!("{e:#}")));
    let (white_level, black_level) = (level_of(white_elo)?, level_of(black_elo)?);
    let mut limited_elo = None;
    while board.ending().is_none() && board.sans.len() < cap {
        let white = board.position.turn() == Color::White;
        let (elo, level) = if white {
            (white_elo, white_level)
        } else {
            (black_elo, black_level)
        };
        let uci = if config.engine_limit {
            if limited_elo != Some(elo) {
                session.set_option("UCI_LimitStrength", "true")?;
                session.set_option("UCI_Elo", &elo.to_string())?;
                limited_elo = Some(elo);
            }
            let request = board.request(Limit::Depth(weaken::pick_depth(level)), 1);
            session.search(&request)?.best_move
        } else {
            weakened_move(session, (&board.start_fen, &board.ucis), level, &mut rng)?
        };
        let Some(uci) = uci else { break };
        let m = board.legal_move(uci)?;
        board.play(m);
    }
    let (result, ending) = board.ending().unwrap_or(("*", "ply limit"));
    Ok(Game {
        index,
        white_elo,
        black_elo,
        sans: board.sans,
        ucis: board.ucis,
        result: result.to_string(),
        ending: ending.to_string(),
        source,
    })
}

/// Plays a prefix of a human game on `board`: the game drawn uniformly
/// from the pool, its length uniformly from `start.plies` (capped so that
/// the source game goes on after it), both with the game's generator.
fn play_human_prefix(
    board: &mut Board,
    pool: &HumanPool,
    start: &HumanStart,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Result<SourceGame, EngineError> {
    let game = &pool.games.games[rng.random_range(0..pool.games.games.len())];
    // The pool holds games longer than the shortest prefix (a puzzle's
    // line may be shorter: its prefix is capped by it).
    let longest = (start.plies[1] as usize).min(game.moves.len().saturating_sub(1));
    let shortest = (start.plies[0] as usize).min(longest);
    let ply = rng.random_range(shortest..=longest);
    let start_position = game
        .start()
        .map_err(|e| EngineError::Fatal(format!("{}: {e:#}", pool.games.path.display())))?;
    *board = Board::starting_at(start_position);
    for uci in &game.moves[..ply] {
        let m = board.legal_move(*uci).map_err(|e| {
            EngineError::Fatal(format!(
                "{} game {}: {e}",
                pool.games.path.display(),
                game.number
            ))
        })?;
        board.play(m);
    }
    Ok(SourceGame {
        file_sha256: pool.sha256.clone(),
        game: game.clone(),
        ply,
    })
}

/// The PGN tags naming a grown game's source: the file by its sha256, the
/// game by its number in the file and its own tags, the prefix's length,
/// and the source game's moves (UCI), from which mining knows its
/// positions (`SourceMoves`).
pub(crate) fn source_tags(source: &SourceGame) -> Vec<(String, String)> {
    let mut tags = vec![
        ("SourceFile".to_string(), source.file_sha256.clone()),
        ("SourceGame".to_string(), source.game.number.to_string()),
        ("SourcePly".to_string(), source.ply.to_string()),
    ];
    for (name, value) in source.game.tags() {
        tags.push((format!("Source{name}"), value.to_string()));
    }
    if let Some(fen) = &source.game.fen {
        tags.push(("SourceFEN".to_string(), fen.to_string()));
    }
    let moves: Vec<String> = source.game.moves.iter().map(|m| m.to_string()).collect();
    tags.push(("SourceMoves".to_string(), moves.join(" ")));
    tags
}

/// A PGN tag value with its quotes and backslashes escaped.
fn escape_tag_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The rest of game `index` after its opening, each side's move drawn from
/// its Maia net's probabilities (temperature 1) with the game's generator.
fn play_maia_game(
    mut board: Board,
    bench: &MaiaBench,
    rng: &mut rand_chacha::ChaCha8Rng,
    cap: usize,
    index: u64,
) -> Result<Game, EngineError> {
    let mut draw_rating = |range: [u32; 2]| rng.random_range(range[0] / 100..=range[1] / 100) * 100;
    let players = &bench.players;
    let (white_rating, black_rating) = (draw_rating(players.white), draw_rating(players.black));
    let net_of = |rating: u32| {
        bench
            .net(rating)
            .ok_or_else(|| EngineError::Fatal(format!("no Maia net of rating {rating} loaded")))
    };
    let (white_net, black_net) = (net_of(white_rating)?, net_of(black_rating)?);
    // The board played these moves: each is legal where it was played.
    let mut history = History::from_read_line(&board.start_fen, &board.ucis)
        .map_err(|e| EngineError::Fatal(format!("replaying the game's opening: {e:#}")))?;
    while board.ending().is_none() && board.sans.len() < cap {
        let net = if board.position.turn() == Color::White {
            white_net
        } else {
            black_net
        };
        let probabilities = net.evaluate_one(&history);
        // A net's probabilities are finite and sum to 1 over the legal
        // moves; a position without one has ended above.
        let weights = WeightedIndex::new(probabilities.at_net(0))
            .map_err(|e| EngineError::Fatal(format!("Maia probabilities: {e}")))?;
        let m = probabilities.moves()[weights.sample(rng)];
        history.push(m);
        board.play(m);
    }
    let (result, ending) = board.ending().unwrap_or(("*", "ply limit"));
    Ok(Game {
        index,
        white_elo: white_rating as i32,
        black_elo: black_rating as i32,
        sans: board.sans,
        ucis: board.ucis,
        result: result.to_string(),
        ending: ending.to_string(),
        source: None,
    })
}

/// The games of a PGN file written by `selfplay`, each with its text (a
/// game starts at an `[Event "` line: `selfplay` writes every game so).
pub(crate) fn split_games(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = text
        .match_indices("[Event \"")
        .map(|(at, _)| at)
        .filter(|&at| at == 0 || text.as_bytes()[at - 1] == b'\n')
        .collect();
    starts.push(text.len());
    starts.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A release's seed lands in the `Seed` column, an int64: every name
    /// gets one that fits, `maia-30` of the committed seed among them (its
    /// 64-bit draw, 10156276233110103937, did not fit and stopped the
    /// release at its JSON Lines file).
    #[test]
    fn release_seeds_fit_the_int64_seed_column() {
        assert_eq!(
            release_seed(20261130, "maia-30"),
            10156276233110103937 & (i64::MAX as u64)
        );
        for i in 0..1000 {
            let seed = release_seed(20261130, &format!("2026-{i:02}"));
            assert!(i64::try_from(seed).is_ok(), "{i}: {seed}");
        }
        assert_ne!(release_seed(20261130, "a"), release_seed(20261130, "b"));
    }
}
