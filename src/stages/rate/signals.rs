//! The board's signals of one puzzle, per solver move: facts read from the
//! position and the solution alone (no engine search), which the rating
//! features ([`super::features`]) read beside the human-move nets'.

use shakmaty::{Chess, Color, Move, Position, Role};

use crate::chess::line::PuzzleLine;

/// Board facts of one solver move, from the position alone.
#[derive(Clone, Debug, Default)]
pub(crate) struct BoardFacts {
    pub legal_moves: f64,
    pub checks_available: f64,
    pub captures_available: f64,
    pub is_capture: f64,
    pub is_check: f64,
    pub is_quiet: f64,
    pub is_promotion: f64,
    pub moved_value: f64,
    pub captured_value: f64,
    /// The moved piece lands where the opponent attacks it and is worth
    /// more than what it took: it can be taken back at a loss.
    pub is_sacrifice: f64,
    /// The solution takes on the square the opponent just moved to.
    pub is_recapture: f64,
    /// The opponent's move before it was a capture.
    pub after_capture: f64,
    /// Rank of the solution among legal moves ordered captures (most
    /// valuable victim, least valuable attacker) first, then checks.
    pub naive_rank: f64,
    pub distance: f64,
    pub backward: f64,
    /// The solver starts in check (after a checking opponent move).
    pub in_check: f64,
    /// Captures other than the solution that win material at once: of an
    /// undefended piece or of a piece worth more than the capturer. Decoys.
    pub other_good_captures: f64,
    /// Moves that mate at once.
    pub mates_available: f64,
    pub is_knight: f64,
    pub is_king: f64,
}

fn role_value(role: Role) -> f64 {
    match role {
        Role::Pawn => 1.0,
        Role::Knight | Role::Bishop => 3.0,
        Role::Rook => 5.0,
        Role::Queen => 9.0,
        Role::King => 0.0,
    }
}

fn gives_check(position: &Chess, chess_move: Move) -> bool {
    let mut after = position.clone();
    after.play_unchecked(chess_move);
    after.is_check()
}

/// A move's place in a naive human ordering: captures by victim value then
/// cheapest attacker, then checks, then the rest.
fn naive_key(position: &Chess, chess_move: Move) -> (i32, i32) {
    if let Some(victim) = chess_move.capture() {
        (
            0,
            -(role_value(victim) * 10.0) as i32 + role_value(chess_move.role()) as i32,
        )
    } else if gives_check(position, chess_move) {
        (1, 0)
    } else {
        (2, 0)
    }
}

fn board_facts(position: &Chess, solution: Move, previous: Option<Move>) -> BoardFacts {
    let legal = position.legal_moves();
    let checks = legal.iter().filter(|m| gives_check(position, **m)).count();
    let mates = legal
        .iter()
        .filter(|m| {
            let mut after = position.clone();
            after.play_unchecked(**m);
            after.is_checkmate()
        })
        .count();
    let other_good_captures = legal
        .iter()
        .filter(|m| **m != solution)
        .filter(|m| match m.capture() {
            Some(victim) => {
                let defended = !position
                    .board()
                    .attacks_to(m.to(), !position.turn(), position.board().occupied())
                    .is_empty();
                !defended || role_value(victim) > role_value(m.role())
            }
            None => false,
        })
        .count();
    let captures = legal.iter().filter(|m| m.is_capture()).count();
    let is_check = gives_check(position, solution);
    let is_capture = solution.is_capture();
    let solution_key = naive_key(position, solution);
    let naive_rank = 1 + legal
        .iter()
        .filter(|m| naive_key(position, **m) < solution_key)
        .count();
    let mover = position.turn();
    let mut after = position.clone();
    after.play_unchecked(solution);
    let attacked = !after
        .board()
        .attacks_to(solution.to(), !mover, after.board().occupied())
        .is_empty();
    let moved_value = role_value(solution.promotion().unwrap_or(solution.role()));
    let captured_value = solution.capture().map(role_value).unwrap_or(0.0);
    let from = solution.from().unwrap_or(solution.to());
    let forward = i32::from(solution.to().rank()) - i32::from(from.rank());
    let forward = if mover == Color::White {
        forward
    } else {
        -forward
    };
    BoardFacts {
        legal_moves: legal.len() as f64,
        checks_available: checks as f64,
        captures_available: captures as f64,
        is_capture: f64::from(u8::from(is_capture)),
        is_check: f64::from(u8::from(is_check)),
        is_quiet: f64::from(u8::from(!is_capture && !is_check)),
        is_promotion: f64::from(u8::from(solution.promotion().is_some())),
        moved_value,
        captured_value,
        is_sacrifice: f64::from(u8::from(attacked && moved_value > captured_value)),
        is_recapture: f64::from(u8::from(
            is_capture && previous.is_some_and(|p| p.is_capture() && p.to() == solution.to()),
        )),
        after_capture: f64::from(u8::from(previous.is_some_and(|p| p.is_capture()))),
        naive_rank: naive_rank as f64,
        distance: f64::from(from.distance(solution.to())),
        backward: f64::from(u8::from(forward < 0)),
        in_check: f64::from(u8::from(position.is_check())),
        other_good_captures: other_good_captures as f64,
        mates_available: mates as f64,
        is_knight: f64::from(u8::from(solution.role() == Role::Knight)),
        is_king: f64::from(u8::from(solution.role() == Role::King)),
    }
}

/// Per solver move of `line`, the board facts of its position and
/// solution (the move before it is the opponent's).
pub(crate) fn board_signals(line: &PuzzleLine) -> Vec<BoardFacts> {
    line.solver_turns()
        .map(|(ply, position, solution)| {
            board_facts(position, solution, Some(line.moves()[ply - 1]))
        })
        .collect()
}

/// Material of one side in pawns (kings count 0).
fn material(position: &Chess, color: Color) -> f64 {
    let board = position.board();
    Role::ALL
        .iter()
        .map(|&role| {
            role_value(role) * (board.by_role(role) & board.by_color(color)).count() as f64
        })
        .sum()
}

/// The material the solver is up (pawns, negative when down) and the
/// material on the board beside pawns, in the position the solver first
/// faces: a puzzle won from behind, or in a crowded middlegame, reads
/// differently from a clean endgame.
pub(crate) fn material_facts(line: &PuzzleLine) -> (f64, f64) {
    line.solver_turns()
        .next()
        .map(|(_, position, _)| {
            let solver = position.turn();
            let up = material(position, solver) - material(position, !solver);
            let pawns = position.board().pawns().count() as f64;
            let total = material(position, solver) + material(position, !solver);
            (up, total - pawns)
        })
        .unwrap_or((0.0, 0.0))
}
