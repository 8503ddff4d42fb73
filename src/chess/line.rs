//! A puzzle's line played on the board: the position the solver first sees,
//! one UCI move at a time with legality checked, and the FEN fields that
//! identify a position.

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};

use crate::chess::record::Puzzle;

/// Plays the opponent's first move: the first position the solver sees.
pub fn first_solver_position(puzzle: &Puzzle) -> std::result::Result<Chess, String> {
    let fen: Fen = puzzle
        .fen
        .parse()
        .map_err(|e| format!("bad FEN {:?}: {e}", puzzle.fen))?;
    let position: Chess = fen
        .into_position(CastlingMode::Standard)
        .map_err(|e| format!("impossible position {:?}: {e}", puzzle.fen))?;
    let first = puzzle.moves.first().ok_or_else(|| "no moves".to_string())?;
    play_uci(position, first)
}

/// Plays one UCI move, checking legality.
pub fn play_uci(position: Chess, uci: &str) -> std::result::Result<Chess, String> {
    let parsed: UciMove = uci.parse().map_err(|_| format!("bad UCI move {uci:?}"))?;
    let m = parsed
        .to_move(&position)
        .map_err(|_| format!("illegal move {uci}"))?;
    position.play(m).map_err(|_| format!("illegal move {uci}"))
}

/// FEN fields that identify a position: board, turn, castling, en passant
/// (only when an en passant capture is legal); no clocks.
pub fn normalized_fen(position: &Chess) -> String {
    let fen = Fen::from_position(position, EnPassantMode::Legal).to_string();
    fen.split(' ').take(4).collect::<Vec<_>>().join(" ")
}
