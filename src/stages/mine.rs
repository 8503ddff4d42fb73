//! `puzzleforge mine`: Epoch-style puzzles from games.
//!
//! A position P (the side to move is the solver) becomes a puzzle when a
//! MultiPV 2 search (depth 18 by default) finds a best move that is unique
//! under the chosen criterion (Epoch by default: best >= -100 cp,
//! second <= 80 cp, best - second >= 180 cp, mate in n = 10000 - n; or
//! Lichess's `is_valid_attack`), the move played in the game differs from
//! it, and it is not a trivial capture ([`crate::chess::capture`]). As in Epoch's
//! generator, only positions from fullmove 10 on where a move was played
//! are analysed, and a position needs two legal moves under the Epoch rule.
//!
//! **The funnel.** Exhaustive analysis (`--exhaustive`) runs the full search
//! on every position. By default a shallow MultiPV 2 search runs first and
//! the full search only where the shallow scores are within a margin of the
//! thresholds, and where the move played lost (at the shallow depth) at
//! least the criterion's gap minus a margin against the best move (it must:
//! the played move is at best the second move). Each game is one unit of
//! engine work, analysed last position first so the engine's hash carries
//! useful entries to earlier positions in the shallow pass; the hash is
//! cleared before each full search (`fresh_hash`), so a position's verdict
//! is the same in the funnel and in `--exhaustive`.
//!
//! **Lines.** From the best move the line is extended while the opponent's
//! reply (the engine's best move) leaves the solver a winning (>= 200 cp or
//! mate) and unique best move (Epoch: a gap >= 180 cp to the second move,
//! the absolute thresholds being for the first move only; Lichess: its
//! rule), up to 5 solver moves; it ends at mate and always on a solver move.
//!
//! **Output** follows [`crate::chess::record`]: FEN is the position before the game
//! move that led to P, Moves starts with that move. Selection, in input
//! order: each game first keeps its earliest `max_per_game` puzzles, then a
//! puzzle whose position (Zobrist hash of P) an earlier kept puzzle already
//! has is dropped (the first occurrence wins). Capping before deduplicating
//! makes the rule compose: mining slices of the input (`run --shard`) and
//! deduplicating the concatenated outputs again gives the same rows as
//! mining the whole input ([`dedup_puzzles`]).

use crate::chess::pgn::GameItem;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::json;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{Chess, EnPassantMode, Move, Position};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::chess::capture::is_trivial_capture;
use crate::chess::columns::{self, Column};
use crate::chess::line::{PuzzleLine, uci_of, ucis_text};
use crate::chess::record::{Puzzle, PuzzleWriter};
use crate::chess::themes::cheap_themes;
use crate::core::error::bad_input;
use crate::core::fileio::open_input;
use crate::core::settings::{flags_over, switch_off, switch_on};
use crate::core::summary::Summary;
use crate::engine::criterion::{self, Criterion, Rule, Scores, Slack, Turn, Why};
use crate::engine::pool::{EnginePool, Session};
use crate::engine::process::{EngineError, Limit, SearchRequest, SearchResult};
use crate::engine::settings::{EngineArgs, EngineConfig};
use crate::engine::uci::Score;

/// `[mine]` in pipeline.toml; CLI flags override it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MineConfig {
    pub criterion: Criterion,
    /// Depth of the full search (Epoch: 18).
    pub depth: u32,
    /// Nodes of the full search; replaces `depth` when set.
    pub nodes: Option<u64>,
    /// Run the full search on every position (the reference).
    pub exhaustive: bool,
    /// Depth of the shallow first pass.
    pub shallow_depth: u32,
    /// Epoch: how far (cp) shallow scores may miss a threshold and still
    /// earn a full search.
    pub shallow_margin_cp: i32,
    /// Lichess: how far (win chance) the shallow gap may miss 0.7.
    pub shallow_margin_win: f64,
    /// Epoch: how far (cp) the played move's shallow loss may miss 180.
    pub shallow_margin_loss_cp: i32,
    /// Clear the engine's hash before each full search, so its verdict
    /// does not depend on the positions searched before.
    pub fresh_hash: bool,
    /// First fullmove number analysed (Epoch: 10).
    pub min_fullmove: u32,
    /// Puzzles kept per game (Lichess: 1).
    pub max_per_game: usize,
    /// Longest line, in solver moves.
    pub max_solver_moves: usize,
    /// Shortest line kept, in solver moves: a target that wants only long
    /// puzzles (the `hard` tier) spends no rating or verification on the
    /// others. Written out only when above 1, so that the default section
    /// (and every fingerprint made from it) reads as before.
    #[serde(skip_serializing_if = "is_one")]
    pub min_solver_moves: usize,
    /// A continuation needs at least this score (cp) for the solver.
    pub winning_cp: i32,
    /// Drop a puzzle whose position an earlier kept puzzle has (the first
    /// occurrence wins). Written out only when off, so that the default
    /// section (and every fingerprint made from it) reads as before.
    #[serde(skip_serializing_if = "is_true")]
    pub dedup_positions: bool,
    /// Judge a position whose best move starts a forced mate within
    /// `max_solver_moves` by the mate rule ([`crate::engine::criterion`]),
    /// and run its line to the mate. Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub mates: bool,
    /// Keep only positions where the game's player missed the move
    /// (Epoch's rule). Off for easy puzzles, which a player may well have
    /// found. Written out only when off.
    #[serde(skip_serializing_if = "is_true")]
    pub missed_only: bool,
    /// Keep puzzles whose first move is a trivial capture (Epoch drops
    /// them): the simple wins of material easy puzzles are made of.
    /// Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub trivial_captures: bool,
    /// With `min_solver_moves` above 1: play the line out at the shallow
    /// depth first and give a full search only to positions whose shallow
    /// line reaches that length. Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub line_screen: bool,
    /// Skip a position, without searching it, when the shallow search of
    /// the position after the move played puts that move above what the
    /// rule lets a second-best move be worth. Written out only when on.
    #[serde(skip_serializing_if = "is_false")]
    pub played_bound: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_true(value: &bool) -> bool {
    *value
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

impl Default for MineConfig {
    fn default() -> Self {
        Self {
            criterion: Criterion::Epoch,
            depth: 18,
            nodes: None,
            exhaustive: false,
            shallow_depth: 8,
            shallow_margin_cp: 150,
            shallow_margin_win: 0.35,
            shallow_margin_loss_cp: 100,
            fresh_hash: true,
            min_fullmove: 10,
            max_per_game: 1,
            max_solver_moves: 5,
            min_solver_moves: 1,
            winning_cp: 200,
            dedup_positions: true,
            mates: false,
            missed_only: true,
            trivial_captures: false,
            line_screen: false,
            played_bound: false,
        }
    }
}

impl MineConfig {
    pub fn validate(&self) -> Result<()> {
        if self.depth == 0 || self.nodes == Some(0) || self.shallow_depth == 0 {
            crate::bail_input!("mine: depth, nodes and shallow_depth must be at least 1");
        }
        if self.max_solver_moves == 0 {
            crate::bail_input!("mine: max_solver_moves must be at least 1");
        }
        if self.min_solver_moves == 0 || self.min_solver_moves > self.max_solver_moves {
            crate::bail_input!(
                "mine: min_solver_moves must be between 1 and max_solver_moves ({})",
                self.max_solver_moves
            );
        }
        Ok(())
    }

    /// The limit of the full search.
    pub fn limit(&self) -> Limit {
        match self.nodes {
            Some(nodes) => Limit::Nodes(nodes),
            None => Limit::Depth(self.depth),
        }
    }
}

/// `puzzleforge mine`. Each search flag overrides the `[mine]` key of its
/// name ([`crate::core::settings::flags_over`]).
#[derive(clap::Args, Debug, Serialize)]
pub struct MineArgs {
    /// Self-play PGN, any PGN, or candidate records from `ingest games`.
    #[serde(skip)]
    pub input: PathBuf,
    /// Output puzzle file (.csv, .jsonl, optionally .zst).
    #[arg(short = 'o', long = "output")]
    #[serde(skip)]
    pub output: PathBuf,
    /// Uniqueness criterion.
    #[arg(long, value_enum)]
    pub criterion: Option<Criterion>,
    /// Depth of the full search (default 18).
    #[arg(long, conflicts_with = "nodes")]
    pub depth: Option<u32>,
    /// Nodes of the full search, instead of a depth.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Full search on every position (the reference; slow).
    #[arg(long)]
    #[serde(serialize_with = "switch_on")]
    pub exhaustive: bool,
    /// Depth of the shallow first pass.
    #[arg(long)]
    pub shallow_depth: Option<u32>,
    /// Puzzles kept per game.
    #[arg(long)]
    pub max_per_game: Option<usize>,
    /// Judge forced mates within the line's length by the mate rule and run
    /// their lines to the mate (`[mine] mates`).
    #[arg(long)]
    #[serde(serialize_with = "switch_on")]
    pub mates: bool,
    /// Keep puzzles whose first move is a trivial capture
    /// (`[mine] trivial_captures`; easy puzzles).
    #[arg(long)]
    #[serde(serialize_with = "switch_on")]
    pub trivial_captures: bool,
    /// Keep positions where the game's player found the move too
    /// (`[mine] missed_only = false`; easy puzzles).
    #[arg(long)]
    #[serde(rename = "missed_only", serialize_with = "switch_off")]
    pub keep_found: bool,
    /// Shortest line kept, in solver moves (`[mine] min_solver_moves`).
    #[arg(long)]
    pub min_solver_moves: Option<usize>,
    /// Screen positions by their line played out at the shallow depth
    /// (`[mine] line_screen`; with --min-solver-moves above 1).
    #[arg(long)]
    #[serde(serialize_with = "switch_on")]
    pub line_screen: bool,
    /// Skip positions whose played move the next position's shallow search
    /// already rules out (`[mine] played_bound`).
    #[arg(long)]
    #[serde(serialize_with = "switch_on")]
    pub played_bound: bool,
    #[command(flatten)]
    #[serde(skip)]
    pub engine: EngineArgs,
}

pub fn run_mine(args: &MineArgs) -> Result<Summary> {
    let config = flags_over(&MineConfig::default(), args)?;
    config.validate()?;
    let (spec, mut pool_config) = args.engine.resolve(&EngineConfig::default())?;
    pool_config.progress = Some("games".to_string());
    let pool = EnginePool::new(spec, pool_config)?;
    run_mine_with(&config, &pool, &args.input, &args.output)
}

/// The extra columns `mine` writes, in order ([`columns::MINE`]).
pub(crate) const MINE_COLUMNS: [Column; 10] = columns::MINE;

/// Mines `input` on `pool` into `output`.
pub fn run_mine_with(
    config: &MineConfig,
    pool: &EnginePool,
    input: &Path,
    output: &Path,
) -> Result<Summary> {
    config.validate()?;
    let loaded = load_input(input)?;
    run_mine_loaded(config, pool, &loaded, output)
}

/// Mines already loaded units (all of an input, or a slice of it) into
/// `output`.
pub(crate) fn run_mine_loaded(
    config: &MineConfig,
    pool: &EnginePool,
    loaded: &Loaded,
    output: &Path,
) -> Result<Summary> {
    Ok(mine_loaded_per_unit(config, pool, loaded, output)?.summary)
}

/// One unit's (game's) funnel: positions analysed, full searches and
/// candidates (before the cap and the dedup).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitFunnel {
    pub positions: u64,
    pub full_searches: u64,
    pub candidates: u64,
}

/// What [`mine_loaded_per_unit`] gives back beside the files it writes.
pub(crate) struct MinedUnits {
    pub summary: Summary,
    /// One funnel per unit, in the units' order.
    pub per_unit: Vec<UnitFunnel>,
    /// Puzzles written: after the per-game cap and the dedup.
    pub puzzles: u64,
}

/// [`run_mine_loaded`], also returning each unit's funnel and the count of
/// puzzles written.
pub(crate) fn mine_loaded_per_unit(
    config: &MineConfig,
    pool: &EnginePool,
    loaded: &Loaded,
    output: &Path,
) -> Result<MinedUnits> {
    config.validate()?;
    let cpu_before = pool.search_cpu_seconds();
    let run = mine_units(&loaded.units, config, pool)?;
    let per_unit = run
        .results
        .iter()
        .map(|r| UnitFunnel {
            positions: r.positions,
            full_searches: r.full_searches,
            candidates: r.found.len() as u64,
        })
        .collect();
    let cpu_seconds = pool.search_cpu_seconds() - cpu_before;
    let puzzles = select_puzzles(&loaded.units, &run, config);
    let columns = columns::names(MINE_COLUMNS).map(String::from);
    let mut writer = PuzzleWriter::create(output, &columns)?;
    for puzzle in &puzzles {
        writer.write(puzzle)?;
    }
    writer.finish()?;
    let stats = run.stats();
    let games = loaded.units.len();
    let per_game = if games == 0 {
        0.0
    } else {
        puzzles.len() as f64 / games as f64
    };
    let per_puzzle = |x: f64| {
        if puzzles.is_empty() {
            None
        } else {
            Some(x / puzzles.len() as f64)
        }
    };
    let human = format!(
        "mine: {games} games ({} skipped), {} positions analysed, {} full searches, {} candidates, \
         {} puzzles ({per_game:.3} per game); {} engine nodes ({} per puzzle), {cpu_seconds:.1} engine CPU s ({} per puzzle) -> {}",
        loaded.skipped.len(),
        stats.positions,
        stats.full_searches,
        stats.candidates,
        puzzles.len(),
        stats.nodes,
        per_puzzle(stats.nodes as f64).map_or("-".to_string(), |v| format!("{v:.0}")),
        per_puzzle(cpu_seconds).map_or("-".to_string(), |v| format!("{v:.2}")),
        output.display()
    );
    let mut human = human;
    for skipped in loaded.skipped.iter().take(10) {
        human.push_str(&format!("\n  skipped {skipped}"));
    }
    let json = json!({
        "command": "mine",
        "games": games,
        "skipped": loaded.skipped.len(),
        "skipped_reasons": loaded.skipped.iter().take(100).collect::<Vec<_>>(),
        "positions_analysed": stats.positions,
        "full_searches": stats.full_searches,
        "candidates": stats.candidates,
        "puzzles": puzzles.len(),
        "puzzles_per_game": per_game,
        "engine_nodes": stats.nodes,
        "engine_nodes_per_puzzle": per_puzzle(stats.nodes as f64),
        "engine_cpu_seconds": cpu_seconds,
        "engine_cpu_seconds_per_puzzle": per_puzzle(cpu_seconds),
        "criterion": config.criterion.name(),
        "exhaustive": config.exhaustive,
        "output": output.display().to_string(),
    });
    Ok(MinedUnits {
        summary: Summary::new(human, json),
        per_unit,
        puzzles: puzzles.len() as u64,
    })
}

/// Where a game came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Selfplay,
    LichessGame,
    Pgn,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Selfplay => "selfplay",
            Source::LichessGame => "lichess-game",
            Source::Pgn => "pgn",
        }
    }
}

/// One unit of mining work: a game (or one candidate position).
#[derive(Clone, Debug)]
pub struct MineUnit {
    pub source: Source,
    pub game_id: String,
    pub game_url: String,
    pub seed: String,
    pub white_elo: String,
    pub black_elo: String,
    /// Ply number (1-based) of `moves[0]` in the original game.
    pub first_ply: u32,
    /// The id to keep (candidate records), else one is derived.
    pub keep_id: Option<String>,
    /// FEN the moves start from.
    pub start_fen: Fen,
    /// UCI moves from `start_fen`.
    pub moves: Vec<UciMove>,
    /// Positions to analyse: after `k` moves, with the move then played.
    pub targets: Vec<Target>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Moves from the start (>= 1: the puzzle needs the move leading here).
    pub after: usize,
    /// The move played from here in the game, if known.
    pub played: Option<UciMove>,
}

/// What the input gave: units and the reasons some games were skipped.
pub struct Loaded {
    pub units: Vec<MineUnit>,
    pub skipped: Vec<String>,
}

/// Reads PGN (sniffed by a leading `[`) or puzzle records.
pub fn load_input(path: &Path) -> Result<Loaded> {
    let mut input = open_input(path)?;
    let first = crate::core::fileio::first_content_byte(&mut input, path)?;
    match first {
        None => Err(bad_input(format!("{}: the file is empty", path.display()))),
        Some(b'[') | Some(b'1') => load_pgn(path, input),
        Some(_) => load_candidates(path),
    }
}

/// Epoch's analysis positions of a game: after each move, from
/// `min_fullmove` on, where a further move was played. `line` is the game
/// played from its start as far as its moves are legal.
pub(crate) fn game_targets(line: &PuzzleLine, moves: &[UciMove], min_fullmove: u32) -> Vec<Target> {
    (1..moves.len().min(line.plies() + 1))
        .filter(|&after| line.positions()[after].fullmoves().get() >= min_fullmove)
        .map(|after| Target {
            after,
            played: Some(moves[after]),
        })
        .collect()
}

fn load_pgn(path: &Path, input: Box<dyn BufRead + Send>) -> Result<Loaded> {
    let mut units = Vec::new();
    let mut skipped = Vec::new();
    for item in crate::chess::pgn::PgnGames::new(input) {
        let item = item.map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
        let game = match item {
            GameItem::Game(game) => game,
            GameItem::Filtered { number, reason } => {
                skipped.push(format!("{} game {number}: {reason}", path.display()));
                continue;
            }
            GameItem::Invalid(invalid) => {
                skipped.push(format!("{}: {invalid}", path.display()));
                continue;
            }
        };
        let tag = |name: &str| game.tags.get(name).unwrap_or_default().to_string();
        let site = tag("Site");
        let (source, game_id, game_url) = if tag("Event") == "puzzleforge selfplay"
            || (!tag("Seed").is_empty() && !tag("Mode").is_empty())
        {
            (
                Source::Selfplay,
                format!("selfplay-{}-{}", tag("Seed"), tag("Round")),
                String::new(),
            )
        } else if site.contains("lichess.org/") {
            let id = site.rsplit('/').next().unwrap_or_default().to_string();
            (Source::LichessGame, id, site.clone())
        } else {
            (Source::Pgn, format!("pgn-{}", game.number), String::new())
        };
        let start = &game.initial;
        units.push(MineUnit {
            source,
            game_id,
            game_url,
            seed: tag("Seed"),
            white_elo: tag("WhiteElo"),
            black_elo: tag("BlackElo"),
            // Ply numbers count from the game's start (a FEN tag may start late).
            first_ply: (start.fullmoves().get() - 1) * 2 + u32::from(start.turn().is_black()) + 1,
            keep_id: None,
            start_fen: Fen::from_position(start, EnPassantMode::Legal),
            moves: game.moves.iter().map(|m| uci_of(m.mv)).collect(),
            targets: Vec::new(),
        });
    }
    Ok(Loaded { units, skipped })
}

fn load_candidates(path: &Path) -> Result<Loaded> {
    let mut units = Vec::new();
    let mut skipped = Vec::new();
    crate::chess::record::for_each_row(path, |(line, row)| {
        let puzzle = match row {
            Ok(puzzle) => puzzle,
            Err(e) => {
                skipped.push(format!("{} line {line}: {e}", path.display()));
                return Ok(());
            }
        };
        let place = format!("{} line {line}", path.display());
        let mut played = match PuzzleLine::from_read_fen(&puzzle.fen) {
            Ok(played) => played,
            Err(e) => {
                skipped.push(e.at(place).to_string());
                return Ok(());
            }
        };
        let Some(&blunder) = puzzle.moves.first() else {
            skipped.push(format!("{place}: no move"));
            return Ok(());
        };
        if let Err(e) = played.play_move(blunder) {
            skipped.push(e.at(place).to_string());
            return Ok(());
        }
        let start = played.start();
        let (url_id, url_ply) = puzzle.game_id_and_ply().unwrap_or_default();
        let game_id = puzzle
            .get(Column::GameId)
            .map(str::to_string)
            .filter(|s| !s.is_empty())
            .unwrap_or(url_id);
        let first_ply = puzzle
            .get(Column::Ply)
            .and_then(|p| p.parse().ok())
            .or(url_ply)
            .unwrap_or_else(|| {
                (start.fullmoves().get() - 1) * 2 + u32::from(start.turn().is_black()) + 1
            });
        units.push(MineUnit {
            source: Source::LichessGame,
            game_id,
            game_url: puzzle.game_url.clone(),
            seed: String::new(),
            white_elo: puzzle.get(Column::WhiteElo).unwrap_or_default().to_string(),
            black_elo: puzzle.get(Column::BlackElo).unwrap_or_default().to_string(),
            first_ply,
            keep_id: Some(puzzle.id.clone()).filter(|id| !id.is_empty()),
            start_fen: puzzle.fen.clone(),
            moves: vec![blunder],
            targets: vec![Target {
                after: 1,
                played: None,
            }],
        });
        Ok(())
    })?;
    Ok(Loaded { units, skipped })
}

/// A position that passed the criterion, with its extended line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// Moves from the unit's start to the puzzle position.
    pub after: usize,
    pub best_move: UciMove,
    pub best_score: Score,
    pub second_score: Option<Score>,
    /// Nodes of the full search at the puzzle position.
    pub nodes: u64,
    /// Solver first, ends on a solver move; the engine's replies and best
    /// moves as it spelled them.
    pub line: Vec<UciMove>,
    pub zobrist: u64,
    /// The rule the puzzle passed: the criterion's, or `mate`.
    pub criterion: Criterion,
}

/// What one unit produced.
#[derive(Clone, Debug, Default)]
pub(crate) struct UnitResult {
    pub found: Vec<Found>,
    pub positions: u64,
    pub full_searches: u64,
    pub nodes: u64,
}

/// Totals over units.
#[derive(Clone, Debug, Default)]
pub(crate) struct MineStats {
    pub positions: u64,
    pub full_searches: u64,
    pub candidates: u64,
    pub nodes: u64,
}

pub(crate) struct MineRun {
    pub results: Vec<UnitResult>,
}

impl MineRun {
    pub fn stats(&self) -> MineStats {
        let mut stats = MineStats::default();
        for r in &self.results {
            stats.positions += r.positions;
            stats.full_searches += r.full_searches;
            stats.candidates += r.found.len() as u64;
            stats.nodes += r.nodes;
        }
        stats
    }

    /// The candidates found, as (unit index, ply, best move): what two
    /// runs over the same units are compared by.
    pub fn candidate_keys(&self) -> HashSet<(usize, usize, UciMove)> {
        self.results
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.found.iter().map(move |f| (i, f.after, f.best_move)))
            .collect()
    }
}

/// The funnel against the exhaustive search on the same units and one pool:
/// the comparison `bench mine` and `bench generate` report (recall of the
/// funnel's candidates, ratio of engine nodes), kept in one place so that
/// both benches measure the same thing.
pub(crate) struct FunnelCheck {
    pub exhaustive: MineRun,
    pub funnel: MineRun,
    /// Engine search CPU seconds of each run.
    pub exhaustive_cpu_seconds: f64,
    pub funnel_cpu_seconds: f64,
    /// Candidates of each run, and the exhaustive ones the funnel also found.
    pub exhaustive_candidates: usize,
    pub funnel_candidates: usize,
    pub found: usize,
    /// Puzzles the exhaustive run keeps (`select_puzzles` under its
    /// settings): what Epoch's procedure would publish from these units.
    pub exhaustive_puzzles: usize,
}

impl FunnelCheck {
    /// Mines `units` with `funnel` made exhaustive, then with `funnel`
    /// itself, one after the other on `pool`.
    pub fn run(units: &[MineUnit], funnel: &MineConfig, pool: &EnginePool) -> Result<Self> {
        let exhaustive_config = MineConfig {
            exhaustive: true,
            ..funnel.clone()
        };
        let start = pool.search_cpu_seconds();
        let exhaustive = mine_units(units, &exhaustive_config, pool)?;
        let middle = pool.search_cpu_seconds();
        let cheap = mine_units(units, funnel, pool)?;
        let end = pool.search_cpu_seconds();
        let (reference_keys, cheap_keys) = (exhaustive.candidate_keys(), cheap.candidate_keys());
        Ok(Self {
            exhaustive_puzzles: select_puzzles(units, &exhaustive, &exhaustive_config).len(),
            exhaustive_candidates: reference_keys.len(),
            funnel_candidates: cheap_keys.len(),
            found: reference_keys.intersection(&cheap_keys).count(),
            exhaustive,
            funnel: cheap,
            exhaustive_cpu_seconds: middle - start,
            funnel_cpu_seconds: end - middle,
        })
    }

    /// Share of the exhaustive candidates the funnel found (1 when the
    /// exhaustive search found none: nothing was missed).
    pub fn recall(&self) -> f64 {
        if self.exhaustive_candidates == 0 {
            1.0
        } else {
            self.found as f64 / self.exhaustive_candidates as f64
        }
    }

    /// Exhaustive nodes over the funnel's; none when the funnel searched
    /// nothing.
    pub fn nodes_ratio(&self) -> Option<f64> {
        let (exhaustive, funnel) = (self.exhaustive.stats().nodes, self.funnel.stats().nodes);
        (funnel > 0).then(|| exhaustive as f64 / funnel as f64)
    }
}

/// Mines every unit across the pool (one unit of work per game).
pub(crate) fn mine_units(
    units: &[MineUnit],
    config: &MineConfig,
    pool: &EnginePool,
) -> Result<MineRun> {
    let results = pool.map(units, |session, _, unit| mine_unit(session, unit, config))?;
    Ok(MineRun { results })
}

/// Analyses one unit's targets, last to first, on one engine.
pub(crate) fn mine_unit(
    session: &mut Session,
    unit: &MineUnit,
    config: &MineConfig,
) -> Result<UnitResult, EngineError> {
    let mut result = UnitResult::default();
    let Some(line) = unit_line(unit) else {
        return Ok(result);
    };
    let targets: Vec<Target> = if unit.targets.is_empty() {
        game_targets(&line, &unit.moves, config.min_fullmove)
    } else {
        unit.targets.clone()
    };
    // Shallow best scores by position index, for the played-move filter.
    let mut shallow_best: HashMap<usize, Score> = HashMap::new();
    for target in targets.iter().rev() {
        let Some(position) = line.position_after(target.after) else {
            continue;
        };
        if target.after == 0 || position.legal_moves().is_empty() {
            continue;
        }
        result.positions += 1;
        if !config.exhaustive
            && config.played_bound
            && played_move_rules_out(target, &shallow_best, config)
        {
            continue;
        }
        if !config.exhaustive
            && !shallow_pass(
                session,
                unit,
                &line,
                target,
                config,
                &mut shallow_best,
                &mut result,
            )?
        {
            continue;
        }
        if let Some(found) = full_search(session, unit, target, position, config, &mut result)? {
            result.found.push(found);
        }
    }
    result.found.reverse();
    Ok(result)
}

/// The unit's moves played from its FEN, up to the first illegal one;
/// `None` when the FEN is not a legal position.
fn unit_line(unit: &MineUnit) -> Option<PuzzleLine> {
    let mut line = PuzzleLine::from_read_fen(&unit.start_fen).ok()?;
    for uci in &unit.moves {
        if line.play_move(*uci).is_err() {
            break;
        }
    }
    Some(line)
}

/// A search of the position after `moves` from the unit's FEN.
fn search_request(unit: &MineUnit, moves: &[UciMove], limit: Limit, multipv: u32) -> SearchRequest {
    SearchRequest {
        fen: unit.start_fen.clone(),
        moves: moves.to_vec(),
        limit,
        multipv,
    }
}

/// The funnel's shallow pass at a target: can the full search still pass,
/// and did the move played lose enough against the best move? Records the
/// shallow best scores it sees in `shallow_best`.
fn shallow_pass(
    session: &mut Session,
    unit: &MineUnit,
    line: &PuzzleLine,
    target: &Target,
    config: &MineConfig,
    shallow_best: &mut HashMap<usize, Score>,
    result: &mut UnitResult,
) -> Result<bool, EngineError> {
    let Some(position) = line.position_after(target.after) else {
        return Ok(false);
    };
    let history = &unit.moves[..target.after];
    let shallow = session.search(&search_request(
        unit,
        history,
        Limit::Depth(config.shallow_depth),
        2,
    ))?;
    result.nodes += shallow.nodes;
    if let Some(best) = shallow.lines.first() {
        shallow_best.insert(target.after, best.score);
    }
    if !shallow_may_pass(&shallow, position, config) {
        return Ok(false);
    }
    if config.line_screen
        && config.min_solver_moves > 1
        && !shallow_line_may_reach(session, unit, history, position, &shallow, config, result)?
    {
        return Ok(false);
    }
    if target.played.is_none() || !config.missed_only {
        return Ok(true);
    }
    let next = target.after + 1;
    let played_value = match line.position_after(next) {
        None => None,
        Some(after) if after.is_checkmate() => Some(Score::Mate(1)),
        Some(after) if after.is_game_over() => Some(Score::Cp(0)),
        Some(_) => {
            if let Entry::Vacant(slot) = shallow_best.entry(next) {
                let reply_request = search_request(
                    unit,
                    &unit.moves[..next],
                    Limit::Depth(config.shallow_depth),
                    1,
                );
                let searched = session.search(&reply_request)?;
                result.nodes += searched.nodes;
                if let Some(best) = searched.lines.first() {
                    slot.insert(best.score);
                }
            }
            shallow_best.get(&next).map(|score| negate(*score))
        }
    };
    Ok(match (shallow.lines.first(), played_value) {
        (Some(best), Some(played)) => played_move_may_lose_enough(best.score, played, config),
        _ => true,
    })
}

/// The line screen (`[mine] line_screen`, for targets of long lines): can
/// the line from this position still reach `min_solver_moves`? The line is
/// played out at the shallow depth (the opponent's best reply, then the
/// solver's best move), each later solver move held to the rule within the
/// funnel's slack; a position whose shallow line stops short gets no full
/// search. A full search and its line extension cost far more than these
/// shallow searches, and a long-line target keeps only long lines.
fn shallow_line_may_reach(
    session: &mut Session,
    unit: &MineUnit,
    history: &[UciMove],
    position: &Chess,
    shallow: &SearchResult,
    config: &MineConfig,
    result: &mut UnitResult,
) -> Result<bool, EngineError> {
    let Some(first) = shallow.lines.first().and_then(|line| line.pv.first()) else {
        return Ok(false);
    };
    let rule = rule_for(shallow.lines.first().map(|line| line.score), config);
    let slack = Slack {
        cp: config.shallow_margin_cp,
        win_chance: config.shallow_margin_win,
    };
    let limit = Limit::Depth(config.shallow_depth);
    let mut moves = history.to_vec();
    let mut pos = position.clone();
    let mut next = *first;
    for _ in 1..config.min_solver_moves {
        let Ok(solver_move) = next.to_move(&pos) else {
            return Ok(false);
        };
        pos.play_unchecked(solver_move);
        moves.push(next);
        if pos.is_game_over() {
            return Ok(false);
        }
        let reply = session.search(&search_request(unit, &moves, limit, 1))?;
        result.nodes += reply.nodes;
        let Some(reply_uci) = reply.best_move else {
            return Ok(false);
        };
        let Ok(reply_move) = reply_uci.to_move(&pos) else {
            return Ok(false);
        };
        pos.play_unchecked(reply_move);
        moves.push(uci_of(reply_move));
        if pos.is_game_over() {
            return Ok(false);
        }
        let searched = session.search(&search_request(unit, &moves, limit, 2))?;
        result.nodes += searched.nodes;
        let (Some(best), second) = (
            searched.lines.first(),
            searched.lines.get(1).map(|line| line.score),
        ) else {
            return Ok(false);
        };
        let scores = Scores::new(best.score, second);
        if !criterion::may_pass_later(rule, &scores, slack)
            || best.score.to_cp() < config.winning_cp - slack.cp
        {
            return Ok(false);
        }
        let Some(uci) = best.pv.first() else {
            return Ok(false);
        };
        next = *uci;
    }
    Ok(true)
}

/// The played-move bound (`[mine] played_bound`): the move played is at
/// best the second-best move (Epoch keeps only positions the player
/// missed), so when the shallow search of the position after it, already
/// made (targets are analysed last to first), puts it above what any rule
/// lets a second move be worth, the position cannot pass and needs no
/// search of its own.
fn played_move_rules_out(
    target: &Target,
    shallow_best: &HashMap<usize, Score>,
    config: &MineConfig,
) -> bool {
    if !config.missed_only || target.played.is_none() {
        return false;
    }
    let Some(after) = shallow_best.get(&(target.after + 1)) else {
        return false;
    };
    let played = negate(*after);
    let mut rules = vec![Rule::from(config.criterion)];
    if config.mates {
        rules.push(Rule::Mate);
    }
    !rules
        .into_iter()
        .any(|rule| criterion::second_may_pass(rule, played, slack(config)))
}

/// The rule the first solver move is judged by, given the full search's
/// best score: the mate rule for a forced mate within the line's length
/// when `mates` is on (or the criterion is `mate`), else the criterion's.
fn rule_for(best: Option<Score>, config: &MineConfig) -> Rule {
    let short_mate =
        matches!(best, Some(Score::Mate(n)) if n > 0 && n as usize <= config.max_solver_moves);
    if config.mates && short_mate {
        Rule::Mate
    } else {
        config.criterion.into()
    }
}

/// The funnel's slack around the rules' thresholds (shallow scores).
fn slack(config: &MineConfig) -> Slack {
    Slack {
        cp: config.shallow_margin_cp,
        win_chance: config.shallow_margin_win,
    }
}

/// The full search at a target and, when its best move passes the
/// criterion, differs from the move played and is no trivial capture, the
/// puzzle found there with its extended line.
fn full_search(
    session: &mut Session,
    unit: &MineUnit,
    target: &Target,
    position: &Chess,
    config: &MineConfig,
    result: &mut UnitResult,
) -> Result<Option<Found>, EngineError> {
    let history = &unit.moves[..target.after];
    if config.fresh_hash {
        // The verdict then depends on the position alone, not on what
        // the engine saw before: the funnel and --exhaustive agree.
        session.set_option("Clear Hash", "true")?;
    }
    let request = search_request(unit, history, config.limit(), 2);
    let deep = session.search(&request)?;
    result.nodes += deep.nodes;
    result.full_searches += 1;
    let rule = rule_for(deep.lines.first().map(|line| line.score), config);
    let judged = criterion::judge_result(session, &request, &deep, position, rule, Turn::First)?;
    result.nodes += judged.extra_nodes;
    let (Some(best_move), Some(best_score), true) =
        (judged.best_move, judged.best_score, judged.decision.unique)
    else {
        return Ok(None);
    };
    let Ok(best) = best_move.to_move(position) else {
        return Err(EngineError::Garbage(format!(
            "best move {best_move} is not legal"
        )));
    };
    if config.missed_only && played_an_accepted_move(position, target, best, best_score) {
        return Ok(None);
    }
    if !config.trivial_captures && is_trivial_capture(position, best) {
        return Ok(None);
    }
    let Some((line, line_nodes)) =
        extend_line(session, unit, history, position, best, rule, config)?
    else {
        return Ok(None);
    };
    result.nodes += line_nodes;
    let zobrist: Zobrist64 = position.zobrist_hash(EnPassantMode::Legal);
    Ok(Some(Found {
        after: target.after,
        best_move,
        best_score,
        second_score: judged.second_score,
        nodes: deep.nodes,
        line,
        zobrist: zobrist.0,
        criterion: match rule {
            Rule::Mate => Criterion::Mate,
            _ => config.criterion,
        },
    }))
}

/// Did the game's player find the move (Epoch keeps only positions where
/// the player missed it)? The best move, or on a mate in 1 any mating move,
/// which the puzzle accepts as well.
fn played_an_accepted_move(position: &Chess, target: &Target, best: Move, score: Score) -> bool {
    let Some(played) = target.played else {
        return false;
    };
    played.to_move(position).is_ok_and(|m| {
        m == best
            || (score == Score::Mate(1) && {
                let mut after = position.clone();
                after.play_unchecked(m);
                after.is_checkmate()
            })
    })
}

/// A score from the other side's point of view.
fn negate(score: Score) -> Score {
    match score {
        Score::Cp(cp) => Score::Cp(-cp),
        Score::Mate(n) if n > 0 => Score::Mate(-n),
        // Mated now or in n: the other side mates in n + 1 (close enough
        // for a filter: only the sign and size matter).
        Score::Mate(n) => Score::Mate(1 - n),
    }
}

/// The move played is at best the second-best move, so it must lose at
/// least the rule's gap against the best move. Judged on shallow scores
/// with a margin: `played` is the played move's value for the side to
/// move (minus the opponent's shallow score after it).
fn played_move_may_lose_enough(best: Score, played: Score, config: &MineConfig) -> bool {
    let slack = Slack {
        cp: config.shallow_margin_loss_cp,
        win_chance: config.shallow_margin_win,
    };
    criterion::played_loses_enough(rule_for(Some(best), config), best, played, slack)
}

/// Can the full search still pass, judging by the shallow one? A shallow
/// search that lost its second line (a fail-low) leaves it to the full one.
fn shallow_may_pass(shallow: &SearchResult, position: &Chess, config: &MineConfig) -> bool {
    let Some(best) = shallow.lines.first().map(|l| l.score) else {
        return false;
    };
    let Some(second) = shallow.lines.get(1).map(|l| l.score) else {
        return position.legal_moves().len() >= 2;
    };
    let scores = Scores::new(best, Some(second));
    criterion::may_pass(config.criterion.into(), &scores, slack(config))
        || (config.mates && criterion::may_pass(Rule::Mate, &scores, slack(config)))
}

/// Extends the solver's line from `best` at `position` (see module docs),
/// every later solver move judged by `rule`. `None` when a mate line does
/// not reach its mate as the only good move at every step.
fn extend_line(
    session: &mut Session,
    unit: &MineUnit,
    history: &[UciMove],
    position: &Chess,
    best: Move,
    rule: Rule,
    config: &MineConfig,
) -> Result<Option<(Vec<UciMove>, u64)>, EngineError> {
    let mut nodes = 0;
    let mut moves: Vec<UciMove> = history.to_vec();
    let mut line = vec![uci_of(best)];
    // Per solver move: was it the only legal move?
    let mut forced = vec![false];
    moves.push(uci_of(best));
    let mut pos = position.clone();
    pos.play_unchecked(best);
    while line.len().div_ceil(2) < config.max_solver_moves {
        if pos.is_game_over() {
            break;
        }
        let request = |moves: &[UciMove], multipv: u32| SearchRequest {
            fen: unit.start_fen.clone(),
            moves: moves.to_vec(),
            limit: config.limit(),
            multipv,
        };
        // The opponent's reply: the engine's best move, the longest
        // resistance when it is mated.
        let reply = session.search(&request(&moves, 1))?;
        nodes += reply.nodes;
        let Some(reply_uci) = reply.best_move else {
            break;
        };
        let Ok(reply_move) = reply_uci.to_move(&pos) else {
            return Err(EngineError::Garbage(format!(
                "reply {reply_uci} is not legal"
            )));
        };
        let mut after_reply = pos.clone();
        after_reply.play_unchecked(reply_move);
        if after_reply.is_game_over() {
            break;
        }
        let mut next_moves = moves.clone();
        next_moves.push(uci_of(reply_move));
        let (judged, searched) = criterion::judge(
            session,
            &request(&next_moves, 2),
            &after_reply,
            rule,
            Turn::Later,
        )?;
        nodes += searched.nodes + judged.extra_nodes;
        let (Some(next_best), Some(score), true) =
            (judged.best_move, judged.best_score, judged.decision.unique)
        else {
            break;
        };
        if score.to_cp() < config.winning_cp {
            break;
        }
        let Ok(next_move) = next_best.to_move(&after_reply) else {
            return Err(EngineError::Garbage(format!(
                "best move {next_best} is not legal"
            )));
        };
        after_reply.play_unchecked(next_move);
        pos = after_reply;
        next_moves.push(uci_of(next_move));
        moves = next_moves;
        line.push(reply_uci);
        line.push(next_best);
        forced.push(judged.decision.why == Why::Forced);
    }
    let keep = criterion::ends_on_a_choice(&forced);
    line.truncate((2 * keep).saturating_sub(1));
    if rule == Rule::Mate && !pos_after(position, &line).is_some_and(|p| p.is_checkmate()) {
        return Ok(None);
    }
    if line.is_empty() {
        return Ok(None);
    }
    Ok(Some((line, nodes)))
}

/// The position after `line` from `start`, when every move is legal.
fn pos_after(start: &Chess, line: &[UciMove]) -> Option<Chess> {
    let mut position = start.clone();
    for uci in line {
        let m = uci.to_move(&position).ok()?;
        position.play_unchecked(m);
    }
    Some(position)
}

/// Builds the output: input order, each game's earliest `max_per_game`
/// puzzles, then no position twice (the first occurrence wins). The cap
/// comes before the deduplication so that the rule composes across slices
/// of the input (see the module comment).
pub(crate) fn select_puzzles(
    units: &[MineUnit],
    run: &MineRun,
    config: &MineConfig,
) -> Vec<Puzzle> {
    let mut capped = Vec::new();
    for (unit, result) in units.iter().zip(&run.results) {
        capped.extend(
            result
                .found
                .iter()
                .filter(|found| found.line.len().div_ceil(2) >= config.min_solver_moves)
                .filter_map(|found| Some((found.zobrist, build_puzzle(unit, found)?)))
                .take(config.max_per_game),
        );
    }
    let mut seen = HashSet::new();
    capped
        .into_iter()
        .filter(|(zobrist, _)| !config.dedup_positions || seen.insert(*zobrist))
        .map(|(_, puzzle)| puzzle)
        .collect()
}

/// The Zobrist hash of a mined puzzle's position (after the opponent's
/// move), the key `select_puzzles` deduplicates by; `None` when the FEN or
/// the first move does not replay.
pub(crate) fn puzzle_zobrist(puzzle: &Puzzle) -> Option<u64> {
    let mut line = PuzzleLine::from_read_fen(&puzzle.fen).ok()?;
    line.play_move(*puzzle.moves.first()?).ok()?;
    let zobrist: Zobrist64 = line.last_position().zobrist_hash(EnPassantMode::Legal);
    Some(zobrist.0)
}

/// Drops every puzzle whose position an earlier one has (first occurrence
/// wins): merging the outputs of mining slices, concatenated in slice order,
/// into the output of mining the whole input. Returns, per puzzle, whether
/// it was kept. A puzzle whose position does not replay is kept (mine never
/// writes one).
pub(crate) fn dedup_puzzles(puzzles: &[Puzzle]) -> Vec<bool> {
    let mut seen = HashSet::new();
    puzzles
        .iter()
        .map(|puzzle| puzzle_zobrist(puzzle).is_none_or(|z| seen.insert(z)))
        .collect()
}

fn build_puzzle(unit: &MineUnit, found: &Found) -> Option<Puzzle> {
    // The game up to the puzzle's position, then the puzzle's line.
    let mut line = PuzzleLine::from_read_fen(&unit.start_fen).ok()?;
    for uci in &unit.moves[..found.after] {
        line.play_move(*uci).ok()?;
    }
    for uci in &found.line {
        line.play_move(*uci).ok()?;
    }
    let fen = Fen::from_position(line.position_after(found.after - 1)?, EnPassantMode::Legal);
    let leading = unit.moves[found.after - 1];
    let themes = cheap_themes(
        line.position_after(found.after)?,
        &line.moves()[found.after..],
    );
    let mut moves = vec![leading];
    moves.extend(found.line.iter().cloned());
    let ply = unit.first_ply + found.after as u32 - 1;
    let id = match &unit.keep_id {
        Some(id) => id.clone(),
        None => {
            let digest = crate::core::fileio::sha256_bytes(
                format!("{fen} {}", ucis_text(&moves)).as_bytes(),
            );
            format!("pf{}", &digest[..10])
        }
    };
    let game_url = match unit.source {
        Source::LichessGame if !unit.game_url.is_empty() && !unit.game_url.contains('#') => {
            format!("{}#{ply}", unit.game_url)
        }
        _ => unit.game_url.clone(),
    };
    let mut puzzle = Puzzle {
        id,
        fen,
        moves,
        themes,
        game_url,
        ..Puzzle::default()
    };
    puzzle.set(Column::Source, unit.source.name());
    puzzle.set(Column::GameId, unit.game_id.clone());
    puzzle.set(Column::Ply, ply.to_string());
    puzzle.set(Column::Seed, unit.seed.clone());
    puzzle.set(Column::WhiteElo, unit.white_elo.clone());
    puzzle.set(Column::BlackElo, unit.black_elo.clone());
    puzzle.set(Column::BestScore, found.best_score.to_cp().to_string());
    puzzle.set(
        Column::SecondScore,
        found
            .second_score
            .map(|s| s.to_cp().to_string())
            .unwrap_or_default(),
    );
    puzzle.set(Column::Criterion, found.criterion.name());
    puzzle.set(Column::Nodes, found.nodes.to_string());
    Some(puzzle)
}
