//! The positions a puzzle asks the solver about.
//!
//! Every solver move of a puzzle is one independent question: the
//! reference line is played up to the position before it, whatever the
//! solver answered earlier.

use anyhow::Result;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Color, Move, Position};

pub use crate::chess::line::fen_of;
use crate::chess::line::{LineError, accepts_answer, legal_move, parse_position};
use crate::chess::record::Puzzle;
use crate::core::error::bad_input;

/// One position to answer.
#[derive(Clone, Debug)]
pub struct PositionTask {
    /// Index of the puzzle in the set.
    pub puzzle_index: usize,
    /// 0 for the first solver move, 1 for the second, ...
    pub move_index: usize,
    pub position: Chess,
    /// The reference answer, as the puzzle spells it.
    pub expected: UciMove,
    /// The reference answer played in `position`: what
    /// [`crate::chess::line::accepts_answer`] compares an answer with.
    pub(crate) solution: Move,
    /// SAN of the moves from the puzzle's FEN to this position.
    pub history_san: Vec<String>,
}

/// The position a model is shown, in the forms prompts use.
#[derive(Clone, Debug)]
pub(crate) struct PositionView {
    pub fen: String,
    /// "white" or "black".
    pub side: &'static str,
    /// Legal moves, UCI, sorted.
    pub legal_uci: Vec<String>,
    /// Legal moves, SAN, in the same order.
    pub legal_san: Vec<String>,
    /// Moves leading here (SAN), space-separated; may be empty.
    pub history: String,
}

impl PositionView {
    pub fn new(position: &Chess, history_san: &[String]) -> Self {
        let mut legal: Vec<(String, String)> = position
            .legal_moves()
            .into_iter()
            .map(|m| {
                (
                    m.to_uci(CastlingMode::Standard).to_string(),
                    SanPlus::from_move(position.clone(), m).to_string(),
                )
            })
            .collect();
        legal.sort();
        Self {
            fen: fen_of(position),
            side: side_name(position.turn()),
            legal_uci: legal.iter().map(|(u, _)| u.clone()).collect(),
            legal_san: legal.into_iter().map(|(_, s)| s).collect(),
            history: history_san.join(" "),
        }
    }
}

pub(crate) fn side_name(color: Color) -> &'static str {
    match color {
        Color::White => "white",
        Color::Black => "black",
    }
}

/// A bad FEN or move as a bad-input error naming `what` (a puzzle id, a
/// config entry).
fn bad_line(error: LineError, what: &str) -> anyhow::Error {
    bad_input(error.at(what).to_string())
}

/// Parses a FEN; errors name `what` (a puzzle id, a config entry).
pub fn position_from_fen(fen: &str, what: &str) -> Result<Chess> {
    parse_position(fen).map_err(|e| bad_line(e, what))
}

/// Checks that a UCI move is legal in `position`.
pub(crate) fn legal_uci_move(position: &Chess, uci: &UciMove, what: &str) -> Result<Move> {
    legal_move(position, uci).map_err(|e| bad_line(e, what))
}

/// The solver positions of one puzzle.
pub fn puzzle_tasks(puzzle_index: usize, puzzle: &Puzzle) -> Result<Vec<PositionTask>> {
    let what = format!("puzzle {} (#{})", puzzle.id, puzzle_index + 1);
    let line = puzzle.line().map_err(|e| bad_line(e, &what))?;
    // SAN of the moves leading to each position.
    let history: Vec<String> = line
        .positions()
        .iter()
        .zip(line.moves())
        .map(|(position, m)| SanPlus::from_move(position.clone(), *m).to_string())
        .collect();
    let tasks = line
        .solver_turns()
        .map(|(ply, position, solution)| {
            let move_index = ply / 2;
            PositionTask {
                puzzle_index,
                move_index,
                position: position.clone(),
                expected: puzzle.moves[ply],
                solution,
                history_san: history[..ply].to_vec(),
            }
        })
        .collect();
    Ok(tasks)
}

/// Whether `played` answers the task correctly, by the rule every judge of
/// answers shares ([`accepts_answer`]): the reference move, or any move
/// that checkmates. A move not legal in the position is not correct.
pub fn is_correct(task: &PositionTask, played: &UciMove) -> bool {
    played
        .to_move(&task.position)
        .is_ok_and(|m| accepts_answer(&task.position, task.solution, m))
}

/// One question of a run: a position under a template in a repeat.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    pub template: usize,
    pub repeat: u32,
    pub task: usize,
}
