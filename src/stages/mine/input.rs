//! The stage's input: the units of mining work ([`MineUnit`], a game or
//! one candidate position) read from PGN or from candidate puzzle records,
//! and the positions of a game that are analysed ([`game_targets`]).
//! Apart because reading games knows nothing of the engine: generation
//! and the benches load units here and mine them elsewhere.

use crate::chess::pgn::{GameItem, GameRecord};
use anyhow::Result;
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{EnPassantMode, Position};
use std::io::BufRead;
use std::path::Path;

use crate::chess::columns::Column;
use crate::chess::line::{PuzzleLine, uci_of};
use crate::chess::novelty::{Idea, START_GAME, START_PUZZLE};
use crate::core::error::bad_input;
use crate::core::fileio::open_input;
use crate::engine::process::{Limit, SearchRequest};

/// Where a game came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Selfplay,
    LichessGame,
    Pgn,
    /// A game of `[sources] human_games`: its positions are public.
    HumanGame,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Selfplay => "selfplay",
            Source::LichessGame => "lichess-game",
            Source::Pgn => "pgn",
            Source::HumanGame => "human-game",
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
    /// For a game grown from a human game: the position keys of that
    /// source game, sorted (its `SourceMoves` tag). A puzzle at one of them
    /// is a public position, not a new one, and is dropped.
    pub public_positions: Vec<u64>,
    /// For a game grown from a human game: the source's idea (a puzzle's
    /// solver positions and moves, or every position of a game). A puzzle
    /// that is a near copy of it ([`crate::chess::novelty`]) is not new and
    /// is dropped.
    pub source_idea: Option<Idea>,
}

impl MineUnit {
    /// Whether the position with key `zobrist` is one of the source
    /// game's.
    pub(crate) fn is_public(&self, zobrist: u64) -> bool {
        self.public_positions.binary_search(&zobrist).is_ok()
    }
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

impl Loaded {
    /// `shard`'s slice of the units (its skipped games kept as they are):
    /// the shards' slices, mined apart and merged, are the whole input's
    /// puzzles ([`super::dedup_puzzles`]).
    pub(crate) fn slice(mut self, shard: &crate::core::shard::Shard) -> Loaded {
        let range = shard.range(self.units.len() as u64);
        self.units = self.units[range.start as usize..range.end as usize].to_vec();
        self
    }
}

/// Where a self-play game started, as its puzzles' `GameUrl` says it:
/// empty for a random opening (or an engine's own game), else the human
/// source it grew from, named by its file's sha256 (first 16 digits) and
/// the puzzle's id (`start:puzzle:SHA:ID`) or the game's number and the
/// prefix's plies (`start:game:SHA:N:PLY`).
fn start_url(tag: &dyn Fn(&str) -> String) -> String {
    let file = tag("SourceFile");
    if file.is_empty() {
        return String::new();
    }
    let file = &file[..file.len().min(16)];
    match tag("SourcePuzzleId") {
        id if !id.is_empty() => format!("{START_PUZZLE}{file}:{id}"),
        _ => format!(
            "{START_GAME}{file}:{}:{}",
            tag("SourceGame"),
            tag("SourcePly")
        ),
    }
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

/// The most plies of a game the engine is given before a searched
/// position: a position 100 plies past the last capture or pawn move is a
/// draw by the fifty-move rule, whatever came before.
const HISTORY_PLIES: usize = 100;

/// A search of the position after `moves` from the unit's FEN; `game` is
/// the unit's line (its moves played from its FEN, [`super::funnel::unit_line`]).
///
/// The engine is given the position after the game's last capture or pawn
/// move (its FEN carries the fifty-move counter) and the moves since, at
/// most [`HISTORY_PLIES`] of them: no earlier position can repeat, so it
/// searches as it would from the whole game, while the command stays as
/// long as that stretch. Sent whole, a game of `n` plies cost the engine
/// `n` moves to read per search, `n` squared over the game: a 4,000-ply
/// game of knight shuffles took 48 s at 2,000 nodes, 15 times its
/// 800-ply start (`docs/mining.md`, "Long games").
pub(super) fn search_request(
    unit: &MineUnit,
    game: &PuzzleLine,
    moves: &[UciMove],
    limit: Limit,
    multipv: u32,
) -> SearchRequest {
    let (fen, skip) = history_start(unit, game, moves);
    SearchRequest {
        fen,
        moves: moves.get(skip..).unwrap_or_default().to_vec(),
        limit,
        multipv,
    }
}

/// Where [`search_request`]'s history starts: the FEN and how many of
/// `moves` it stands for (0: the unit's own FEN).
fn history_start(unit: &MineUnit, game: &PuzzleLine, moves: &[UciMove]) -> (Fen, usize) {
    // How many of `moves` are the game's: all when they are a slice of the
    // game's own moves (no comparison), else up to the first that differs
    // (a line or a branch played off the game).
    let on_game = if std::ptr::eq(moves.as_ptr(), unit.moves.as_ptr()) {
        moves.len()
    } else {
        moves
            .iter()
            .zip(&unit.moves)
            .take_while(|(a, b)| a == b)
            .count()
    }
    .min(game.plies());
    let Some(position) = game.position_after(on_game) else {
        return (unit.start_fen.clone(), 0);
    };
    let back = usize::try_from(position.halfmoves())
        .unwrap_or(usize::MAX)
        .min(HISTORY_PLIES);
    match on_game.saturating_sub(back) {
        0 => (unit.start_fen.clone(), 0),
        skip => match game.position_after(skip) {
            Some(start) => (Fen::from_position(start, EnPassantMode::PseudoLegal), skip),
            None => (unit.start_fen.clone(), 0),
        },
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
                start_url(&tag),
            )
        } else if site.contains("lichess.org/") {
            let id = site.rsplit('/').next().unwrap_or_default().to_string();
            (Source::LichessGame, id, site.clone())
        } else {
            (Source::Pgn, format!("pgn-{}", game.number), String::new())
        };
        let start = &game.initial;
        let (public_positions, source_idea) = source_of(path, &game)?;
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
            public_positions,
            source_idea,
        });
    }
    Ok(Loaded { units, skipped })
}

/// The source game of a game grown from a human game or a puzzle (its
/// `SourceMoves`, from `SourceFEN` when a puzzle's): the keys of its
/// positions, which mining leaves alone as public, and its idea, which
/// the novelty rule keeps the mined puzzles away from. None for others.
fn source_of(path: &Path, game: &GameRecord) -> Result<(Vec<u64>, Option<Idea>)> {
    Ok(match game.tags.get("SourceMoves") {
        Some(text) => {
            let moves = text
                .split_whitespace()
                .map(|m| m.parse::<UciMove>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| {
                    bad_input(format!(
                        "{} game {}: SourceMoves: {e}",
                        path.display(),
                        game.number
                    ))
                })?;
            // A game grown from a puzzle: the puzzle's line starts at
            // its FEN.
            let source_start = match game.tags.get("SourceFEN") {
                Some(fen) => crate::chess::line::parse_position(fen).map_err(|e| {
                    bad_input(format!(
                        "{} game {}: SourceFEN: {e}",
                        path.display(),
                        game.number
                    ))
                })?,
                None => shakmaty::Chess::default(),
            };
            let idea = match game.tags.get("SourceFEN") {
                Some(_) => Idea::of_puzzle_line(&source_start, &moves),
                None => Idea::of_game(&source_start, &moves),
            };
            (
                crate::chess::human_games::position_keys_from(source_start, &moves),
                Some(idea),
            )
        }
        None => (Vec::new(), None),
    })
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
            public_positions: Vec::new(),
            source_idea: None,
        });
        Ok(())
    })?;
    Ok(Loaded { units, skipped })
}
